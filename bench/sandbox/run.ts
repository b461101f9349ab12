// bench/sandbox: the start-up a sandbox adds to an episode (issue 30 §5; goal p50 ≤ 15 ms added). The same
// trivial episode (/bin/true through startProcessEpisode, as the local controller runs one) unsandboxed and
// under each sandbox shape, interleaved round by round in one run, so the machine's load hits all alike.
// network gateway twice: a task's later episodes (they enter the task's kept relay) and its first (which starts
// the relay: a fresh task name each time). Also the relay's RSS. Usage: node bench/sandbox/run.ts [--rounds N]
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxSchema } from '../../controller/api/sandbox.ts';
import { prepareSandbox } from '../../controller/executors/sandbox/episode-sandbox.ts';
import { startProcessEpisode } from '../../controller/executors/process/process-episode.ts';
import { endRelay } from '../../controller/executors/sandbox/relay-holder.ts';
import type { ProcessEpisodeRequest } from '../../controller/executors/process/episode-request.ts';
import { removeDir, tempDir } from '../local/lib.ts';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { analyzerOptions } from '../../controller/executors/output/analyzer-options.ts';

const SPEC = AgentTaskSpecSchema.parse({ prompt: 'x', agent: { command: ['/bin/true'], output: 'text' } });

const at = process.argv.indexOf('--rounds');
const ROUNDS = at > 0 ? Number(process.argv[at + 1]) : 40;
const dir = tempDir('episodic-bench-sandbox-');
const stateDir = join(dir, '.episodic');
const workspace = join(dir, 'ws');
mkdirSync(workspace, { recursive: true });

const SHAPES = {
  none: { network: 'none' },
  'none + cgroup v1 bounds': { network: 'none', resources: { memoryMiB: 512, pids: 256, cpu: 1 } },
  gateway: { network: 'gateway' },
  'gateway, first episode of a task': { network: 'gateway' },
  open: { network: 'open' },
} as const;
type Shape = 'plain' | keyof typeof SHAPES;
const GATEWAY_ENV = { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/v1' };

function request(n: number, argv: string[], env: Record<string, string>): ProcessEpisodeRequest {
  return {
    namespace: 'default',
    name: 'bench',
    episode: n,
    maxEpisodes: 1_000_000,
    argv,
    promptVia: 'argument',
    prompt: 'x',
    env,
    cwd: workspace,
    timeoutMs: 60_000,
    logFile: join(stateDir, 'logs', `episode-${n}.log`),
    onExitZero: true,
    analyzer: analyzerOptions(SPEC.agent, SPEC.completion),
  };
}

let n = 0;
/** ms from the request to the episode's result: set-up, start, the agent's run and the end. */
async function episode(shape: Shape, argv = ['/bin/true']): Promise<{ ms: number; log: string; relayPid?: number }> {
  n += 1;
  const env = shape.startsWith('gateway') ? GATEWAY_ENV : {};
  const started = performance.now();
  const sandbox =
    shape === 'plain'
      ? undefined
      : await prepareSandbox({
          sandbox: SandboxSchema.parse(SHAPES[shape]),
          stateDir,
          namespace: 'default',
          name: shape.includes('first') ? `first-${n}` : 'bench',
          workspace,
          env,
        });
  const run = await startProcessEpisode({ ...request(n, argv, env), sandbox });
  const result = await run.result;
  const ms = performance.now() - started;
  if (shape.includes('first')) endRelay(`default/first-${n}`); // a throwaway task: its relay need not linger
  if (result.exitCode !== 0) throw new Error(`${shape}: episode ${n} exited ${result.exitCode}: ${result.message}`);
  return { ms, log: readFileSync(join(stateDir, 'logs', `episode-${n}.log`), 'utf8'), relayPid: sandbox?.relayPid };
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

const shapes: Shape[] = ['plain', ...(Object.keys(SHAPES) as Shape[])];
const times = new Map<Shape, number[]>(shapes.map((s) => [s, []]));
for (const s of shapes) await episode(s); // warm-up: the probe, the modules, the page cache
for (let r = 0; r < ROUNDS; r++) for (const s of shapes) times.get(s)?.push((await episode(s)).ms);

// The relay's RSS: the one child of its namespace's init (bwrap).
const { relayPid } = await episode('gateway');
const relay = readFileSync(`/proc/${relayPid}/task/${relayPid}/children`, 'utf8').trim().split(' ')[0];
const relayRss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${relay}/status`, 'utf8'))?.[1]) / 1024;

const plain = times.get('plain') ?? [];
const rows = shapes.map((s) => {
  const xs = times.get(s) ?? [];
  const added =
    s === 'plain'
      ? ''
      : `${(quantile(xs, 0.5) - quantile(plain, 0.5)).toFixed(1)} / ${(quantile(xs, 0.99) - quantile(plain, 0.99)).toFixed(1)}`;
  return `| ${s} | ${quantile(xs, 0.5).toFixed(1)} | ${quantile(xs, 0.99).toFixed(1)} | ${added} |`;
});
console.log(`bench/sandbox: ${ROUNDS} rounds, /bin/true as the agent, ms from request to result\n`);
console.log('| shape | p50 | p99 | added p50 / p99 |\n| --- | --- | --- | --- |');
console.log(rows.join('\n'));
console.log(`\nrelay RSS: ${relayRss.toFixed(1)} MiB`);
console.log(
  `load average: ${(await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
removeDir(dir, process.argv.includes('--keep'));
