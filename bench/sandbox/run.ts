// bench/sandbox: the start-up a sandbox adds to an episode (issue 30 §5; goal p50 ≤ 15 ms added). The same
// trivial episode (/bin/true through startProcessEpisode, as the local controller runs one) unsandboxed and
// under each sandbox shape, interleaved round by round in one run, so the machine's load hits all alike.
// network gateway twice: a task's later episodes (they enter the task's kept relay) and its first (a fresh task
// name each time: it takes the spare relay started beforehand, or starts one). Then a task's first episode as the controller launches it
// (launchEpisode: a fresh clone of a git workspace, then the episode), plain and network gateway: the relay
// starts beside the clone. Also the relay's RSS. Usage: node bench/sandbox/run.ts [--rounds N]
import { execFileSync } from 'node:child_process';
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
import { launchEpisode } from '../../controller/executors/local/episode-launcher.ts';

const SPEC = AgentTaskSpecSchema.parse({ prompt: 'x', agent: { command: ['/bin/true'], output: 'text' } });

const at = process.argv.indexOf('--rounds');
const ROUNDS = at > 0 ? Number(process.argv[at + 1]) : 40;
const dir = tempDir('episodic-bench-sandbox-');
const stateDir = join(dir, '.episodic');
const workspace = join(dir, 'ws');
mkdirSync(workspace, { recursive: true });

const origin = join(dir, 'origin.git');
const git = (args: string[], cwd = dir) => execFileSync('git', args, { cwd, stdio: 'ignore' });
git(['init', '-q', '-b', 'main', join(dir, 'seed')]);
git(['-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '--allow-empty', '-m', 'seed'], join(dir, 'seed'));
git(['clone', '-q', '--bare', join(dir, 'seed'), origin]);

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

const LAUNCHED = ['first episode of a git task: plain', 'first episode of a git task: gateway'] as const;

/** A task's first episode through launchEpisode: its clone, then /bin/true (sandboxed: network gateway). */
async function launched(shape: (typeof LAUNCHED)[number]): Promise<number> {
  n += 1;
  const name = `git-${n}`;
  const env = Object.entries(GATEWAY_ENV).map(([k, value]) => ({ name: k, value }));
  const spec = AgentTaskSpecSchema.parse({
    prompt: 'x',
    agent: { command: ['/bin/true'], output: 'text', env },
    workspace: { git: { url: origin, ref: 'main' } },
    ...(shape.endsWith('gateway') ? { sandbox: { network: 'gateway' } } : {}),
  });
  const started = performance.now();
  const launch = { root: dir, stateDir, specFile: join(dir, 'bench.yaml'), namespace: 'default', name, number: 1 };
  const episode = await launchEpisode({ ...launch, spec, status: { episodes: 0 } as never });
  const result = await episode.result;
  const ms = performance.now() - started;
  endRelay(`default/${name}`);
  if (result.exitCode !== 0) throw new Error(`${shape}: episode ${n} exited ${result.exitCode}: ${result.message}`);
  return ms;
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

const shapes: Shape[] = ['plain', ...(Object.keys(SHAPES) as Shape[])];
const times = new Map<Shape, number[]>(shapes.map((s) => [s, []]));
const launchTimes = new Map<string, number[]>(LAUNCHED.map((s) => [s, []]));
for (const s of shapes) await episode(s); // warm-up: the probe, the modules, the page cache
for (const s of LAUNCHED) await launched(s);
for (let r = 0; r < ROUNDS; r++) {
  for (const s of shapes) times.get(s)?.push((await episode(s)).ms);
  for (const s of LAUNCHED) launchTimes.get(s)?.push(await launched(s));
}

// The relay's RSS: the one child of its namespace's init (bwrap).
const { relayPid } = await episode('gateway');
const relay = readFileSync(`/proc/${relayPid}/task/${relayPid}/children`, 'utf8').trim().split(' ')[0];
const relayRss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${relay}/status`, 'utf8'))?.[1]) / 1024;

/** A row: p50, p99 and what they add to the baseline's (the first row of its kind, which adds nothing). */
function row(label: string, xs: number[], base: number[]): string {
  const added = (q: number) => (quantile(xs, q) - quantile(base, q)).toFixed(1);
  const vs = xs === base ? '' : `${added(0.5)} / ${added(0.99)}`;
  return `| ${label} | ${quantile(xs, 0.5).toFixed(1)} | ${quantile(xs, 0.99).toFixed(1)} | ${vs} |`;
}
const plain = times.get('plain') ?? [];
const rows = shapes.map((s) => row(s, times.get(s) ?? [], plain));
const gitPlain = launchTimes.get(LAUNCHED[0]) ?? [];
rows.push(...LAUNCHED.map((s) => row(s, launchTimes.get(s) ?? [], gitPlain)));
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
