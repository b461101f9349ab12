// Real Claude Code under `episodic run`: every scenario in text, json and stream-json (see local-suite.ts).
import { defineLocalSuite } from './local-suite.ts';

defineLocalSuite({ cli: 'claude', concurrency: 3 });
