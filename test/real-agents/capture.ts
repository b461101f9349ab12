// Captures what the real CLIs print for every scenario and format, straight (no episodic in between), into
// test/fixtures/agent-outputs/real/<cli>-<version>/<format>.<scenario>.{stdout,stderr,exit}, paths scrubbed
// as in ../shared/agent-outputs/real/README.md. The fixtures test classifies every file.
//   node test/real-agents/capture.ts [claude|codex|gemini ...] [--only SCENARIO,...]
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT_CLIS, cacheRoot, type CliName } from '../../scripts/agent-clis/clis.ts';
import { SCENARIOS } from '../model-server/scenarios.ts';
import { startModelServer } from '../model-server/server.ts';
import { agentRun, baseEnv, FORMATS, SETUP_VARIANTS, type SetupVariant } from './agents.ts';
import { mapLimit } from './limit.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const OUT = path.join(REPO, 'test/fixtures/agent-outputs/real');
const HANG_KILL_MS = 8000;
/** Anything else that runs this long is stuck too (codex waits for a down server forever). */
const STUCK_KILL_MS = 20_000;
const PROMPT = 'Do the next step of the plan.';
/** The capture's clock and zone; the fixtures test reads them back from capture.json. */
const TZ = 'UTC';

const args = process.argv.slice(2);
const onlyAt = args.indexOf('--only');
const only = onlyAt >= 0 ? new Set(args[onlyAt + 1].split(',')) : undefined;
const clis = args.filter((a, i) => !a.startsWith('--') && i !== onlyAt + 1) as CliName[];
const chosen = clis.length > 0 ? clis : (['claude', 'codex', 'gemini'] as CliName[]);

interface Job {
  cli: CliName;
  format: string;
  /** The file name's scenario part: a server scenario, or setup-<variant>. */
  scenario: string;
  variant?: SetupVariant;
}

const jobs: Job[] = [];
for (const cli of chosen) {
  const scenarios: string[] = [...SCENARIOS];
  // Only a subscriber login makes Claude Code word a 429 as a usage limit.
  if (cli === 'claude') scenarios.push('oauth-usage', 'oauth-usage7d', 'oauth-usage3d', 'oauth-usagenoreset');
  for (const format of FORMATS[cli]) {
    for (const scenario of scenarios) if (!only || only.has(scenario)) jobs.push({ cli, format, scenario });
    for (const variant of SETUP_VARIANTS[cli]) {
      if (!only || only.has(`setup-${variant}`)) jobs.push({ cli, format, scenario: `setup-${variant}`, variant });
    }
  }
}

function scrub(text: string, paths: Record<string, string>, port: number): string {
  let out = text;
  for (const [token, value] of Object.entries(paths)) out = out.split(value).join(token);
  return out.split(`127.0.0.1:${port}`).join('127.0.0.1:$PORT');
}

const server = await startModelServer();
const port = Number(new URL(server.url).port);
const scratch = mkdtempSync(path.join(os.tmpdir(), 'episodic-capture-'));
const capturedAt = new Date();
// A partial capture (--only) keeps the recorded clock: the usage-limit captures were timed by it.
for (const cli of only ? [] : chosen) {
  const meta = AGENT_CLIS.find((c) => c.name === cli)!;
  mkdirSync(path.join(OUT, `${cli}-${meta.version}`), { recursive: true });
  writeFileSync(
    path.join(OUT, `${cli}-${meta.version}`, 'capture.json'),
    `${JSON.stringify({ capturedAt: capturedAt.toISOString(), TZ }, null, 2)}\n`,
  );
}

await mapLimit(jobs, 3, async (job) => {
  const meta = AGENT_CLIS.find((c) => c.name === job.cli)!;
  const home = path.join(scratch, `h-${job.cli}-${job.format}-${job.scenario}`);
  const ws = path.join(scratch, `ws-${job.cli}-${job.format}-${job.scenario}`);
  mkdirSync(ws, { recursive: true });
  const run = agentRun(job.cli, job.format, {
    serverUrl: server.url,
    scenarioName: job.variant ? 'ok' : job.scenario,
    home,
    variant: job.variant,
  });
  const argv = run.promptVia === 'argument' ? [...run.command, PROMPT] : run.command;
  const started = Date.now();
  mkdirSync(path.join(home, 'tmp'), { recursive: true });
  const child = spawn(argv[0], argv.slice(1), {
    cwd: ws,
    env: { ...baseEnv({ TZ, TMPDIR: path.join(home, 'tmp') }), ...run.env },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdin.end(run.promptVia === 'stdin' ? PROMPT : '');
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  // The whole process group: gemini relaunches itself as a child that would keep the pipes open.
  const killer = setTimeout(
    () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    },
    job.scenario === 'hang' ? HANG_KILL_MS : STUCK_KILL_MS,
  );
  const exit = await new Promise<string>((resolve) =>
    child.on('close', (code, signal) => resolve(code === null ? `signal ${signal}` : String(code))),
  );
  clearTimeout(killer);
  // Claude also writes the working directory with "/" as "-" (its project key).
  const paths = { $CLIS: cacheRoot(), $WS: ws, $H: home, $TMP: scratch, '-$TMP': scratch.replace(/\//g, '-') };
  const base = path.join(OUT, `${job.cli}-${meta.version}`, `${job.format}.${job.scenario}`);
  writeFileSync(`${base}.stdout`, scrub(stdout, paths, port));
  writeFileSync(`${base}.stderr`, scrub(stderr, paths, port));
  writeFileSync(`${base}.exit`, `${exit}\n`);
  console.log(
    `${job.cli} ${job.format} ${job.scenario}: exit ${exit} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
});
await server.close();
rmSync(scratch, { recursive: true, force: true });
