// Real Gemini CLI under `episodic run`: one scenario per outcome in stream-json, the success path in text and json (see local-suite.ts).
// Two at a time: each gemini start costs about 1.5 s of CPU.
import { defineLocalSuite } from './local-suite.ts';

defineLocalSuite({ cli: 'gemini', concurrency: 2 });
