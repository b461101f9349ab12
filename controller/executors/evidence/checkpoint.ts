// Checkpoints: after an episode that changed a git workspace, everything it left is committed, so every
// episode's work is one commit to read, revert or bisect; its staging gives the episode's evidence. The same code runs locally and in the episode
// pod's runner (before its push). The committer is fixed unless the repository configures one; hooks,
// signing and fsmonitor are off (an agent-written hook must never run, and nothing may wait on a prompt).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentTaskSpec, Outcome } from '../../api/agent-task.ts';
import { emptyStatus } from '../../api/agent-task.ts';
import type { EpisodeResult } from '../../api/episode-result.ts';
import { judgeEpisode } from '../../reconciler/completion.ts';
import { completionWithoutProgress, withoutProgress } from '../../reconciler/scope.ts';
import type { WorkspaceEvidence } from '../../api/leash.ts';
import { emptyTree, localIdentityConfigured } from '../../git/repo-files.ts';
import { excludePathspecs, headOf, parseAddVerbose, parseNumstat, parseShortstat } from './workspace.ts';
import type { GitSnapshot, SettledTree, WorkspaceSnapshot } from './workspace.ts';

export const CHECKPOINT_IDENTITY = { name: 'episodic', email: 'episodic@localhost' };
const GIT_TIMEOUT_MS = 60_000;
const SAFE_CONFIG = [
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'commit.gpgSign=false',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'protocol.ext.allow=never',
];

/** `episodic: TASK episode N (OUTCOME)` with trailers that name the task and episode. */
export function checkpointMessage(namespace: string, task: string, episode: number, outcome: Outcome): string {
  return `episodic: ${task} episode ${episode} (${outcome})\n\nEpisodic-Task: ${namespace}/${task}\nEpisodic-Episode: ${episode}\n`;
}

/**
 * The outcome the commit message names. It is decided before the reconciler records the episode, from
 * the same pure rules (judgeEpisode): the outcome of the facts, a complete checklist, and the evidence a completion
 * claim needs (an episode that commits changed the workspace, so `changes` holds). The record has the
 * final word (it also weighs completion signals across episodes).
 */
export function checkpointOutcome(
  result: EpisodeResult,
  completion: AgentTaskSpec['completion'],
  episode: number,
): Outcome {
  const counted = { ...emptyStatus(), episodes: episode, workspaceChanges: 1, testOnlyEpisodes: 0 };
  // A reverted out-of-scope episode is judged as no progress, as the record will (reconciler/scope.ts).
  return judgeEpisode(withoutProgress(result), completionWithoutProgress(completion, result), counted).outcome;
}

export interface EpisodeCheckpoint {
  dir: string;
  namespace: string;
  task: string;
  episode: number;
  completion: AgentTaskSpec['completion'];
  /** The snapshot taken before the agent started (workspace.ts); without it the checkpoint has no evidence. */
  before?: WorkspaceSnapshot;
  /** Paths never committed (the controller's state directory when it sits inside the workspace). */
  exclude?: string[];
  /** Extra environment for git (the runner's credentials and safe.directory). */
  env?: Record<string, string>;
  timeoutMs?: number;
}

export interface CheckpointOutcome {
  result: EpisodeResult;
  error?: string;
  /** The tree is clean at this HEAD now: the next episode's snapshot needs no git (workspace.ts). */
  settled?: SettledTree;
}

/**
 * Stage and commit what the episode left in a git workspace, and read its evidence from that staging: the
 * staged tree against HEAD before the episode is what it changed. The result's evidence then names the
 * commit that holds its work (the checkpoint, or the agent's own HEAD when it left nothing uncommitted).
 * A failed git step leaves the result's workspace evidence out and says why in `error`.
 */
export async function checkpointEpisode(result: EpisodeResult, cp: EpisodeCheckpoint): Promise<CheckpointOutcome> {
  if (!existsSync(join(cp.dir, '.git'))) return { result };
  const message = (workspace?: WorkspaceEvidence) => {
    const judged = workspace ? { ...result, evidence: { ...result.evidence, workspace } } : result;
    return checkpointMessage(cp.namespace, cp.task, cp.episode, checkpointOutcome(judged, cp.completion, cp.episode));
  };
  try {
    const before = cp.before?.kind === 'git' ? cp.before : undefined;
    const made = await settleGit(cp, before, message);
    const workspace = made.workspace ?? result.evidence?.workspace; // a directory that became a repository
    if (!workspace) return { result, settled: made.settled };
    const commit = made.commit ? { commit: made.commit } : {};
    return {
      result: { ...result, evidence: { ...result.evidence, workspace: { ...workspace, ...commit } } },
      settled: made.settled,
    };
  } catch (err) {
    return { result, error: `checkpoint commit failed: ${(err as Error).message}` };
  }
}

interface Settled {
  /** Undefined without a git snapshot from before. */
  workspace?: WorkspaceEvidence;
  commit?: string;
  settled?: SettledTree;
}

/**
 * Two git processes when the tree was clean at HEAD before (`add`, then `commit`, whose own summary is the
 * diffstat), one more for the status when that is not known, and a `diff --cached --numstat` when the
 * agent moved HEAD (its diffstat spans the agent's commits). A tree that started dirty needs a status after
 * too: only it tells whether the episode changed anything.
 */
async function settleGit(
  cp: EpisodeCheckpoint,
  before: GitSnapshot | undefined,
  message: (workspace?: WorkspaceEvidence) => string,
): Promise<Settled> {
  const run = gitRunner(cp);
  const pathspec = ['--', '.', ...excludePathspecs(cp.dir, cp.exclude ?? [])];
  const headAfter = await headOf(cp.dir, async (args) => (await run(args, [1])).stdout);
  const heads = { ...(before?.head ? { headBefore: before.head } : {}), ...(headAfter ? { headAfter } : {}) };
  const moved = before !== undefined && before.head !== headAfter;
  let statusAfter: string | undefined;
  if (before && before.status !== '') {
    statusAfter = (await run(['status', '--porcelain=v1', '-z', ...pathspec])).stdout;
    if (!moved && statusAfter === before.status)
      return { workspace: { kind: 'git', changed: false, dirty: true, ...heads } };
  }
  // --verbose: the staged paths come with the add itself (no git process more for the files changed).
  const files = parseAddVerbose((await run(['add', '--all', '--verbose', ...pathspec])).stdout);
  // With HEAD moved, what the episode changed is the staged tree against HEAD before (the empty tree in a
  // new repository); otherwise the checkpoint's own summary says it.
  const base = before?.head ?? emptyTree(headAfter);
  const spanned = moved
    ? parseNumstat((await run(['diff', '--cached', '--numstat', '-z', '--no-renames', base, ...pathspec])).stdout)
    : undefined;
  const evidence = (fields: Omit<WorkspaceEvidence, 'kind'>): WorkspaceEvidence | undefined =>
    before ? { kind: 'git', ...heads, ...fields } : undefined;
  const untouched = (): Settled => {
    // Nothing left to commit: changed only if HEAD moved (or the dirty tree's status did), clean if it is.
    const changed = moved || statusAfter !== undefined;
    // A status that showed changes git could not stage (a submodule's own edits): not known clean.
    const unsure = statusAfter !== undefined && statusAfter !== '';
    return {
      workspace: evidence({ changed, dirty: false, ...spanned }),
      ...(moved ? { commit: headAfter } : {}),
      ...(unsure ? {} : { settled: { head: headAfter } }),
    };
  };
  if (statusAfter === '') return untouched(); // the agent committed everything itself
  // A commit is made only of what the agent left: `dirty` and `changed` hold for the message's outcome.
  const left = { changed: true, dirty: true, ...spanned };
  const identity = await identityEnv(cp.dir, run);
  const commitArgs = ['commit', '--no-verify', '--no-edit', '--untracked-files=no', '-m', message(evidence(left))];
  const made = await run(commitArgs, [1], identity);
  if (made.code === 1) {
    if (!NOTHING_TO_COMMIT.test(made.stdout)) throw new Error(`git commit exit 1: ${lastLines(made.stdout)}`);
    return untouched();
  }
  const commit = await headOf(cp.dir, async (args) => (await run(args)).stdout);
  const stat = spanned ?? {
    ...parseShortstat(SHORTSTAT_LINE.exec(made.stdout)?.[0] ?? ''),
    ...(files.length ? { files } : {}),
  };
  return { workspace: evidence({ ...left, ...stat }), commit, settled: { head: commit } };
}

// The summary line `git commit` prints, as `git diff --shortstat` would for the same trees.
const SHORTSTAT_LINE = /^ \d+ files? changed.*$/m;

const NOTHING_TO_COMMIT = /nothing (added )?to commit|no changes added to commit/;

/** The checkpoint's committer: episodic, unless the repository configures its own (`git config --local`). */
async function identityEnv(dir: string, run: GitRun): Promise<Record<string, string>> {
  const known = localIdentityConfigured(dir);
  const configured =
    known === 'unknown' ? (await run(['config', '--local', '--get', 'user.email'], [1])).code === 0 : known;
  if (configured) return {};
  const who = CHECKPOINT_IDENTITY;
  return {
    GIT_AUTHOR_NAME: who.name,
    GIT_AUTHOR_EMAIL: who.email,
    GIT_COMMITTER_NAME: who.name,
    GIT_COMMITTER_EMAIL: who.email,
  };
}

function lastLines(text: string): string {
  return text.trim().split('\n').slice(-2).join(' / ');
}

type GitRun = (
  args: string[],
  allowExit?: number[],
  env?: Record<string, string>,
) => Promise<{ code: number; stdout: string }>;

function gitRunner(req: EpisodeCheckpoint): GitRun {
  return async (args, allowExit = [], env = {}) => {
    const { execa } = await import('execa');
    const r = await execa('git', [...SAFE_CONFIG, ...args], {
      cwd: req.dir,
      // LC_ALL=C: the diffstat and commit's "nothing to commit" are read back, in English.
      env: { GIT_TERMINAL_PROMPT: '0', GIT_EDITOR: 'true', ...req.env, LC_ALL: 'C', ...env },
      timeout: req.timeoutMs ?? GIT_TIMEOUT_MS,
      stdin: 'ignore',
      reject: false,
      maxBuffer: 16 * 1024 * 1024,
    });
    const code = typeof r.exitCode === 'number' ? r.exitCode : -1;
    if (code === 0 || allowExit.includes(code)) return { code, stdout: r.stdout };
    const why = r.timedOut ? 'timed out' : `exit ${r.exitCode ?? r.signal}`;
    const detail = r.stderr.trim().split('\n').slice(-2).join(' / ');
    throw new Error(`git ${args[0]} ${why}${detail ? `: ${detail}` : ''}`);
  };
}
