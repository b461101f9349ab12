// bench/leash: what the leash saves. A fleet of 20 tasks — 5 stuck, 5 slow but progressing, 5 repeating one
// error, 5 that finish in 4 episodes — each episode reporting $0.10, run by `episodic run` with the default
// leash (breaker, consecutive failures) and by a plain bash Ralph loop (ralph.sh) with 20 iterations per task
// that stops a task only at its sentinel. Dollars are the agent's own reports, summed from status and from
// the loop's output; they do not depend on the machine's speed. Usage: node bench/leash/run.ts [--breaker-only] [--keep]
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_CLI, NODE, removeDir, tempDir } from '../local/lib.ts';

const run = promisify(execFile);
const HERE = import.meta.dirname;
const AGENT = join(HERE, 'fleet-agent.sh');
const RALPH = join(HERE, 'ralph.sh');
const ITERATIONS = 20;
const KINDS = ['stuck', 'slow', 'error', 'finish4'] as const;
type Kind = (typeof KINDS)[number];
const NEVER_FINISH: readonly Kind[] = ['stuck', 'error'];
const BREAKER_ONLY = process.argv.includes('--breaker-only');
const PROMPT = 'Work through PLAN.md one step at a time. When every step is done, print <promise>DONE</promise>.';

interface TaskRun {
  kind: Kind;
  name: string;
  costUSD: number;
  episodes: number;
  end: string;
}

const fleet = KINDS.flatMap((kind) => Array.from({ length: 5 }, (_, i) => ({ kind, name: `${kind}-${i + 1}` })));

function taskDoc(t: { kind: Kind; name: string }): string {
  return JSON.stringify({
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentTask',
    metadata: { name: t.name },
    spec: {
      prompt: PROMPT,
      agent: { command: [AGENT], output: 'claude', env: [{ name: 'FLEET_KIND', value: t.kind }] },
      workspace: `ws/${t.name}`,
      completion: { promise: 'DONE' },
      // --breaker-only: failures never skip a task, so only the circuit breaker stops the repeating error.
      limits: { maxEpisodes: ITERATIONS, ...(BREAKER_ONLY ? { maxConsecutiveFailures: ITERATIONS + 1 } : {}) },
      // Backoff only spaces the failing episodes out in time; 1 s keeps the run short without changing its dollars.
      backoff: { initialSeconds: 1, factor: 1, maxSeconds: 1 },
    },
  });
}

async function runEpisodic(root: string): Promise<{ tasks: TaskRun[]; seconds: number }> {
  const dir = join(root, 'episodic');
  mkdirSync(dir, { recursive: true });
  for (const t of fleet) writeFileSync(join(dir, `${t.name}.yaml`), taskDoc(t));
  const started = performance.now();
  await run(NODE, [DEFAULT_CLI, 'run', dir, '--max-concurrent', '4', '--no-table'], { maxBuffer: 64 << 20 }).catch(
    (err: { code?: number }) => {
      if (err.code !== 1) throw err; // 1: not every task succeeded, as intended
    },
  );
  const seconds = (performance.now() - started) / 1000;
  const tasks = fleet.map((t) => {
    const { status } = JSON.parse(readFileSync(join(dir, '.episodic', 'status', 'default', `${t.name}.json`), 'utf8'));
    return { ...t, costUSD: status.costUSD, episodes: status.episodes, end: `${status.phase}/${status.reason}` };
  });
  return { tasks, seconds };
}

async function runBashLoop(root: string): Promise<{ tasks: TaskRun[]; seconds: number }> {
  const dir = join(root, 'bash');
  const promptFile = join(dir, 'prompt.md');
  mkdirSync(dir, { recursive: true });
  writeFileSync(promptFile, PROMPT);
  const started = performance.now();
  const tasks = await Promise.all(
    fleet.map(async (t) => {
      const ws = join(dir, 'ws', t.name);
      const log = join(dir, `${t.name}.log`);
      mkdirSync(ws, { recursive: true });
      const code = await run('bash', [RALPH, String(ITERATIONS), promptFile, log, '--', AGENT], {
        cwd: ws,
        env: { ...process.env, FLEET_KIND: t.kind },
      })
        .then(() => 0)
        .catch((err: { code?: number }) => err.code ?? -1);
      const costs = readFileSync(log, 'utf8')
        .split('\n')
        .flatMap((l) => (l.startsWith('{') ? [JSON.parse(l).total_cost_usd as number] : []));
      const costUSD = costs.reduce((a, b) => a + b, 0);
      return { ...t, costUSD, episodes: costs.length, end: code === 0 ? 'sentinel' : `${ITERATIONS} iterations` };
    }),
  );
  return { tasks, seconds: (performance.now() - started) / 1000 };
}

const sum = (xs: TaskRun[]) => xs.reduce((a, t) => a + t.costUSD, 0);
const money = (x: number) => `$${x.toFixed(2)}`;

function byKind(tasks: TaskRun[], kind: Kind): string {
  const of = tasks.filter((t) => t.kind === kind);
  const ends = [...new Set(of.map((t) => t.end))].join(', ');
  return `${money(sum(of)).padStart(7)}  ${String(of.reduce((a, t) => a + t.episodes, 0)).padStart(4)} ep  ${ends}`;
}

async function main(): Promise<void> {
  const keep = process.argv.includes('--keep');
  const root = tempDir('leash');
  try {
    const bash = await runBashLoop(root);
    const ep = await runEpisodic(root);
    console.log(
      `bench/leash: ${fleet.length} tasks, $0.10 per episode, ${ITERATIONS} iterations per task in the bash loop\n`,
    );
    console.log(`${'kind'.padEnd(8)}  ${'bash loop'.padEnd(40)}  episodic`);
    for (const kind of KINDS)
      console.log(`${kind.padEnd(8)}  ${byKind(bash.tasks, kind).padEnd(40)}  ${byKind(ep.tasks, kind)}`);
    const never = (tasks: TaskRun[]) => tasks.filter((t) => NEVER_FINISH.includes(t.kind));
    const can = (tasks: TaskRun[]) => tasks.filter((t) => !NEVER_FINISH.includes(t.kind));
    const ratioNever = sum(never(ep.tasks)) / sum(never(bash.tasks));
    const ratioCan = sum(can(ep.tasks)) / sum(can(bash.tasks));
    const succeeded = can(ep.tasks).filter((t) => t.end.startsWith('Succeeded/')).length;
    console.log('');
    console.log(
      `never-finish ten: ${money(sum(never(ep.tasks)))} vs ${money(sum(never(bash.tasks)))} = ${(ratioNever * 100).toFixed(1)} % (goal ≤ 30 %) ${ratioNever <= 0.3 ? 'ok' : 'MISSED'}`,
    );
    console.log(
      `can-finish ten:   ${money(sum(can(ep.tasks)))} vs ${money(sum(can(bash.tasks)))} = ${ratioCan.toFixed(2)}x (goal ≤ 1.00x) ${ratioCan <= 1 + 1e-9 ? 'ok' : 'MISSED'}`,
    );
    console.log(
      `can-finish ten Succeeded: ${succeeded}/10 (goal 10/10, zero false trips) ${succeeded === 10 ? 'ok' : 'MISSED'}`,
    );
    console.log(
      `wall time: bash loop ${bash.seconds.toFixed(1)} s, episodic ${ep.seconds.toFixed(1)} s (1 s backoff between failures)`,
    );
  } finally {
    removeDir(root, keep);
  }
}

await main();
