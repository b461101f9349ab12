// Real Codex under `episodic run`: one scenario per outcome in --json, the success path in plain (see local-suite.ts). The agent runs in
// Tokyo and the controller in UTC: codex prints "try again at 7:13 AM" in its own zone, which the spec
// names in completion.resetTimeZone.
import { defineLocalSuite } from './local-suite.ts';

defineLocalSuite({ cli: 'codex', concurrency: 3, agentTz: 'Asia/Tokyo' });
