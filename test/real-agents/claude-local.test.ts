// Real Claude Code under `episodic run`: one scenario per outcome in stream-json, the success path in text and json (see local-suite.ts).
import { defineLocalSuite } from './local-suite.ts';

defineLocalSuite({ cli: 'claude', concurrency: 3 });
