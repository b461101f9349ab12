// Per-episode cost of the evidence and the checkpoint on a real-size git workspace (issue 27 §4): a
// 10,000-file repository, N episodes of an instant agent (it bumps one file) through the real local
// executor (ProcessEpisodeExecutor: snapshot, agent process, evidence, checkpoint commit), against the
// seed's bash loop doing `git add -A && git commit` after the same agent, in the same run. Sides
// alternate; the ratio is the median of each repetition's own ratio. A last, untimed pass of each side
// runs with a PATH shim in front of git that counts its processes.
//
//   node bench/checkpoint/run.ts [--files N] [--episodes N] [--reps N] [--keep]
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import { ProcessEpisodeExecutor } from '../../controller/executors/local/process-executor.ts';
import type { SpecFileTask } from '../../controller/core/ports.ts';
import { SpecDirSource } from '../../controller/sources/local/spec-dir-source.ts';
import { loadSpecDir } from '../../controller/sources/local/spec-files.ts';
import { median, progress, removeDir, spawnTo, tempDir } from '../local/lib.ts';

const GOAL_RATIO = 1.25;
const GOAL_GIT_PER_EPISODE = 4;

interface Options {
  files: number;
  episodes: number;
  reps: number;
  keep: boolean;
}

function parse(argv: string[]): Options {
  const opts: Options = { files: 10_000, episodes: 20, reps: 3, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const int = () => {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 1) throw new Error(`${a}: expected a positive integer, got ${argv[i]}`);
      return n;
    };
    if (a === '--files') opts.files = int();
    else if (a === '--episodes') opts.episodes = int();
    else if (a === '--reps') opts.reps = int();
    else if (a === '--quick') Object.assign(opts, { files: 1000, episodes: 5, reps: 1 });
    else if (a === '--keep') opts.keep = true;
    else throw new Error(`unknown option ${a} (--files N, --episodes N, --reps N, --quick, --keep)`);
  }
  return opts;
}

const IDENTITY = {
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@localhost',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@localhost',
};

/** The instant agent: one /bin/sh process, no forks; it changes one tracked file per run. */
const AGENT = `#!/bin/sh
n=0
[ -f count ] && read -r n <count
echo $((n + 1)) >count
`;

/** The seed's loop: the agent, then `git add -A && git commit`, per iteration. */
const BASH_LOOP = `#!/bin/bash
# usage: loop.sh AGENT WORKSPACE EPISODES
set -u
cd "$2" || exit 2
for ((i = 1; i <= $3; i++)); do
  "$1" </dev/null >/dev/null 2>&1
  git add -A && git commit -q -m "episode $i"
done
`;

function git(cwd: string, ...args: string[]): void {
  execFileSync('git', args, { cwd, env: { ...process.env, ...IDENTITY }, stdio: 'ignore' });
}

/** A repository of `files` small files in directories of 100, committed, plus the count file. */
function buildRepo(dir: string, files: number): void {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '--initial-branch=main');
  for (let i = 0; i < files; i++) {
    const sub = join(dir, `src${Math.floor(i / 100)}`);
    if (i % 100 === 0) mkdirSync(sub);
    writeFileSync(join(sub, `file${i}.txt`), `line one of ${i}\nline two\n`);
  }
  writeFileSync(join(dir, 'count'), '0\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'start');
}

// Resolved before any shim is on PATH: the bench's own git calls are not counted.
const REAL_GIT = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();

function commitCount(dir: string): number {
  return Number(execFileSync(REAL_GIT, ['rev-list', '--count', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim());
}

interface Episodic {
  executor: ProcessEpisodeExecutor;
  /** Resolves the wait for the episode that is running. */
  onEnd: { resolve: () => void };
  task: SpecFileTask;
  ws: string;
}

async function setupEpisodic(root: string, files: number, agent: string): Promise<Episodic> {
  const specs = join(root, 'specs');
  const ws = join(specs, 'ws');
  buildRepo(ws, files);
  writeFileSync(
    join(specs, 'loop.yaml'),
    `apiVersion: episodic.dev/v1alpha1
kind: AgentTask
metadata:
  name: loop
spec:
  prompt: "go"
  agent:
    command: [${JSON.stringify(agent)}]
  workspace: ws
  limits:
    maxEpisodes: 1000
    episodeTimeoutSeconds: 60
`,
  );
  const source = new SpecDirSource();
  source.set(await loadSpecDir(specs));
  const task = source.get('default/loop');
  if (!task?.spec) throw new Error(`bench spec did not load: ${task?.specError}`);
  const executor = new ProcessEpisodeExecutor({
    root: specs,
    stateDir: join(root, 'state'),
    stateId: '00000000-0000-4000-8000-000000000027',
    logger: pino({ level: 'silent' }),
  });
  const onEnd = { resolve: () => {} };
  executor.subscribe(() => onEnd.resolve());
  return { executor, onEnd, task, ws };
}

let nextEpisode = 1;

/** `episodes` episodes one after another through the executor, as the loop would start them. */
async function runEpisodic(e: Episodic, episodes: number): Promise<number> {
  const before = commitCount(e.ws);
  const started = performance.now();
  for (let i = 0; i < episodes; i++) {
    const number = nextEpisode++;
    const status = { ...emptyStatus(), episodes: number - 1 };
    const ended = new Promise<void>((resolve) => {
      e.onEnd.resolve = resolve;
    });
    await e.executor.start(e.task, number, status);
    await ended;
    const seen = e.executor.observe(e.task, { ...status, currentEpisode: { number, startedAt: '' } });
    if (seen?.state !== 'finished') throw new Error(`episode ${number} did not finish: ${JSON.stringify(seen)}`);
    if (!seen.result?.evidence?.workspace?.commit) throw new Error(`episode ${number}: no checkpoint commit`);
    await e.executor.forget(e.task.key);
  }
  const ms = performance.now() - started;
  if (commitCount(e.ws) - before !== episodes) throw new Error('episodic: not one checkpoint per episode');
  return ms;
}

async function runBash(loop: string, agent: string, ws: string, episodes: number, env: NodeJS.ProcessEnv) {
  const before = commitCount(ws);
  const out = join(ws, '..', 'bash-loop.out');
  const s = spawnTo(['/bin/bash', loop, agent, ws, String(episodes)], {
    stdout: out,
    stderr: out,
    env: { ...env, ...IDENTITY },
  });
  const { code, wallMs } = await s.exited;
  if (code !== 0 || commitCount(ws) - before !== episodes) throw new Error(`bash loop exited ${code}`);
  return wallMs;
}

/** A directory with a `git` that logs each start to `log`, then runs the real git. */
function gitShim(dir: string, log: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'git'),
    `#!/bin/sh\necho "$1" >>${JSON.stringify(log)}\nexec ${JSON.stringify(REAL_GIT)} "$@"\n`,
  );
  chmodSync(join(dir, 'git'), 0o755);
  return dir;
}

function countLines(file: string): number {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
  } catch {
    return 0;
  }
}

async function counted(root: string, name: string, run: (env: NodeJS.ProcessEnv) => Promise<unknown>) {
  const log = join(root, `${name}.git-log`);
  const shim = gitShim(join(root, `shim-${name}`), log);
  const saved = process.env.PATH;
  process.env.PATH = `${shim}:${saved}`;
  try {
    await run({ ...process.env });
  } finally {
    process.env.PATH = saved;
  }
  return countLines(log);
}

async function main(): Promise<void> {
  const opts = parse(process.argv.slice(2));
  const root = tempDir('checkpoint');
  progress(`[checkpoint] ${opts.files} files, ${opts.episodes} episodes, ${opts.reps} rep(s) per side, in ${root}`);
  try {
    const agent = join(root, 'agent.sh');
    writeFileSync(agent, AGENT);
    chmodSync(agent, 0o755);
    const loop = join(root, 'loop.sh');
    writeFileSync(loop, BASH_LOOP);
    const e = await setupEpisodic(join(root, 'episodic'), opts.files, agent);
    const bashWs = join(root, 'bash-ws');
    buildRepo(bashWs, opts.files);
    // Warm-up: the page cache, the index's stat data, the executor's code paths.
    await runEpisodic(e, 2);
    await runBash(loop, agent, bashWs, 2, process.env);
    const episodic: number[] = [];
    const bash: number[] = [];
    for (let r = 0; r < opts.reps; r++) {
      const order = r % 2 === 0 ? ['episodic', 'bash'] : ['bash', 'episodic'];
      for (const side of order) {
        if (side === 'episodic') episodic.push(await runEpisodic(e, opts.episodes));
        else bash.push(await runBash(loop, agent, bashWs, opts.episodes, process.env));
      }
      progress(
        `[checkpoint] rep ${r + 1}/${opts.reps}: episodic ${(episodic[r] / 1000).toFixed(2)} s, bash loop ${(bash[r] / 1000).toFixed(2)} s, ratio ${(episodic[r] / bash[r]).toFixed(2)}x`,
      );
    }
    const gitEpisodic = await counted(root, 'episodic', () => runEpisodic(e, opts.episodes));
    const gitBash = await counted(root, 'bash', (env) => runBash(loop, agent, bashWs, opts.episodes, env));
    const ratio = median(episodic.map((ms, i) => ms / bash[i]));
    const perEpisode = gitEpisodic / opts.episodes;
    const lines = [
      `files in the repository          ${opts.files}`,
      `episodes per run                 ${opts.episodes}`,
      `episodic (local executor)        ${(median(episodic) / 1000).toFixed(2)} s  (${(median(episodic) / opts.episodes).toFixed(0)} ms an episode)`,
      `bash loop (git add -A && commit) ${(median(bash) / 1000).toFixed(2)} s  (${(median(bash) / opts.episodes).toFixed(0)} ms an episode)`,
      `ratio episodic / bash loop       ${ratio.toFixed(2)}x  (goal <= ${GOAL_RATIO}: ${ratio <= GOAL_RATIO ? 'ok' : 'MISSED'})`,
      `git processes per episode        episodic ${perEpisode.toFixed(1)} (goal <= ${GOAL_GIT_PER_EPISODE}: ${perEpisode <= GOAL_GIT_PER_EPISODE ? 'ok' : 'MISSED'}), bash loop ${(gitBash / opts.episodes).toFixed(1)}`,
    ];
    console.log(lines.join('\n'));
  } finally {
    removeDir(root, opts.keep);
  }
}

await main();
