// Real Codex under `episodic run`: every scenario, plain and --json (see local-suite.ts). The controller runs
// in Tokyo: codex prints "try again at 7:13 AM" in the agent's zone, which locally is the controller's.
import { defineLocalSuite } from './local-suite.ts';

defineLocalSuite({ cli: 'codex', concurrency: 3, tz: 'Asia/Tokyo' });
