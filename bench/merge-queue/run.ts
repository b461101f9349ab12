// bench/merge-queue (issue 32 §5): N ready branches (each adds its own file, all from one base) through the
// real merge-queue loop (core/merge-queue-loop.ts: journal, fetch, rebase, ff push to a bare remote),
// against a shell-free loop doing `git rebase main BRANCH && git checkout main && git merge --ff-only BRANCH`
// per branch in a plain repository, in the same run. Prints both times, the ratio and git processes per
// integration (the queue's counted by git-workspace.ts, the baseline's by its own argv list).
//
//   node bench/merge-queue/run.ts [--branches N]
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import { systemClock } from '../../controller/core/clock.ts';
import { MergeQueueLoop } from '../../controller/core/merge-queue-loop.ts';
import { localQueuePorts } from '../../controller/executors/local/merge-queue.ts';
import type { LocalQueueTask } from '../../controller/executors/local/merge-queue.ts';
import { gitProcessCount } from '../../controller/git/git-workspace.ts';

const GOAL_RATIO = 1.2;
const argIndex = process.argv.indexOf('--branches');
const N = argIndex > 0 ? Number(process.argv[argIndex + 1]) : 50;
const ID = ['-c', 'user.name=bench', '-c', 'user.email=bench@bench'];
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

/** A repository with main (one commit) and N branches, each adding branch-I.txt on top of main. */
function seed(dir: string): void {
  git(dir, 'init', '--quiet', '-b', 'main');
  writeFileSync(join(dir, 'README'), 'seed\n');
  git(dir, 'add', '.');
  git(dir, ...ID, 'commit', '--quiet', '-m', 'seed');
  for (let i = 0; i < N; i++) {
    git(dir, 'checkout', '--quiet', '-b', `b${i}`, 'main');
    writeFileSync(join(dir, `branch-${i}.txt`), `${i}\n`);
    git(dir, 'add', '.');
    git(dir, ...ID, 'commit', '--quiet', '-m', `b${i}`);
  }
  git(dir, 'checkout', '--quiet', 'main');
}

function baseline(dir: string): { ms: number; processes: number } {
  const started = performance.now();
  let processes = 0;
  const env = { ...process.env, GIT_COMMITTER_NAME: 'bench', GIT_COMMITTER_EMAIL: 'bench@bench' };
  for (let i = 0; i < N; i++) {
    for (const args of [
      ['rebase', '--quiet', 'main', `b${i}`],
      ['checkout', '--quiet', 'main'],
      ['merge', '--quiet', '--ff-only', `b${i}`],
    ]) {
      execFileSync('git', args, { cwd: dir, env });
      processes++;
    }
  }
  return { ms: performance.now() - started, processes };
}

// Each branch adds its own file: nothing conflicts, so no resolution episode is ever asked for.
const noEpisodes = {
  slot: async () => () => undefined,
  run: () => Promise.reject(new Error('bench/merge-queue: no branch conflicts')),
  kill: async () => undefined,
  record: async () => undefined,
};

let statusWrites = 0;

async function queue(root: string, bare: string): Promise<{ ms: number; processes: number }> {
  const tasks: LocalQueueTask[] = [];
  for (let i = 0; i < N; i++) {
    const spec = AgentTaskSpecSchema.parse({
      prompt: 'x',
      agent: { command: ['true'] },
      workspace: { git: { url: bare, ref: `b${i}` } },
      integrate: { into: 'main', queue: 'bench' },
    });
    const at = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
    const status = {
      ...emptyStatus(),
      phase: 'Succeeded' as const,
      lastEpisode: { number: 1, outcome: 'succeeded' as const, finishedAt: at },
    };
    tasks.push({ key: `default/t${i}`, file: join(root, 'spec.yaml'), spec, status });
  }
  const loop = new MergeQueueLoop({
    ports: localQueuePorts(join(root, 'state')),
    logger: pino({ level: 'silent' }),
    clock: systemClock,
    writeStatus: async () => {
      statusWrites++;
    },
    episodes: noEpisodes,
  });
  const before = gitProcessCount();
  const started = performance.now();
  loop.scan(tasks);
  await loop.stop();
  return { ms: performance.now() - started, processes: gitProcessCount() - before };
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'episodic-bench-mq-'));
  try {
    const plain = join(root, 'plain');
    mkdirSync(plain);
    seed(plain);
    const bare = join(root, 'origin.git');
    git(root, 'clone', '--quiet', '--bare', plain, bare);
    const q = await queue(root, bare);
    const b = baseline(plain);
    const count = (dir: string) => Number(git(dir, 'rev-list', '--count', 'main'));
    if (count(bare) !== N + 1 || count(plain) !== N + 1)
      throw new Error(`not all integrated: ${count(bare)} / ${count(plain)}`);
    const ratio = q.ms / b.ms;
    console.log(`branches: ${N}`);
    console.log(`queue:    ${q.ms.toFixed(0)} ms, ${(q.processes / N).toFixed(1)} git processes per integration`);
    console.log(`queue:    ${(statusWrites / N).toFixed(1)} status writes per integration`);
    console.log(`baseline: ${b.ms.toFixed(0)} ms, ${(b.processes / N).toFixed(1)} git processes per integration`);
    console.log(
      `ratio:    ${ratio.toFixed(2)} (goal ≤ ${GOAL_RATIO})${ratio <= GOAL_RATIO ? '' : '  ** over the goal **'}`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
