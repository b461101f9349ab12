// Checkpoints: after an episode that changed a git workspace, everything it left is committed, so every
// episode's work is one commit to read, revert or bisect. The same code runs locally and in the episode
// pod's runner (before its push). The committer is fixed unless the repository configures one; hooks,
// signing and fsmonitor are off (an agent-written hook must never run, and nothing may wait on a prompt).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentTaskSpec, Outcome } from '../../api/agent-task.ts';
import { emptyStatus } from '../../api/agent-task.ts';
import type { EpisodeResult } from '../../api/episode-result.ts';
import { judgeEpisode } from '../../reconciler/completion.ts';
import { completionWithoutProgress, withoutProgress } from '../../reconciler/scope.ts';
import { excludePathspecs } from './workspace.ts';

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

export interface CheckpointRequest {
  /** The workspace: the root of a git repository (its own .git). */
  dir: string;
  namespace: string;
  task: string;
  episode: number;
  outcome: Outcome;
  /** Paths never committed (the controller's state directory when it sits inside the workspace). */
  exclude?: string[];
  /** Extra environment for git (the runner's credentials and safe.directory). */
  env?: Record<string, string>;
  timeoutMs?: number;
}

export type CheckpointResult = { ok: true; commit?: string } | { ok: false; message: string };

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

/** Whether an episode's workspace should get a checkpoint: a git repository that the episode changed. */
export function wantsCheckpoint(dir: string, result: EpisodeResult): boolean {
  if (!existsSync(join(dir, '.git'))) return false;
  // No evidence (the snapshot failed): commit whatever is there rather than lose work.
  return result.evidence?.workspace ? result.evidence.workspace.changed : true;
}

/** Commit everything left in the workspace; `commit` is the new commit, undefined when nothing was left. */
export async function commitCheckpoint(req: CheckpointRequest): Promise<CheckpointResult> {
  const run = gitRunner(req);
  try {
    await run(['add', '--all', '--', '.', ...excludePathspecs(req.dir, req.exclude ?? [])]);
    if ((await run(['diff', '--cached', '--quiet'], [1])).code === 0) return { ok: true };
    const configured = (await run(['config', '--local', '--get', 'user.email'], [1])).code === 0;
    const who = CHECKPOINT_IDENTITY;
    const identity: Record<string, string> = configured
      ? {}
      : {
          GIT_AUTHOR_NAME: who.name,
          GIT_AUTHOR_EMAIL: who.email,
          GIT_COMMITTER_NAME: who.name,
          GIT_COMMITTER_EMAIL: who.email,
        };
    await run(
      [
        'commit',
        '--quiet',
        '--no-verify',
        '--no-edit',
        '-m',
        checkpointMessage(req.namespace, req.task, req.episode, req.outcome),
      ],
      [],
      identity,
    );
    const head = await run(['rev-parse', '--verify', 'HEAD']);
    return { ok: true, commit: head.stdout.trim() };
  } catch (err) {
    return { ok: false, message: `checkpoint commit failed: ${(err as Error).message}` };
  }
}

export interface EpisodeCheckpoint {
  dir: string;
  namespace: string;
  task: string;
  episode: number;
  completion: AgentTaskSpec['completion'];
  exclude?: string[];
  env?: Record<string, string>;
}

/**
 * Checkpoint the episode if it changed a git workspace; the result's evidence then names the commit that
 * holds its work (the checkpoint, or the agent's own HEAD when it left nothing uncommitted). A failed
 * commit leaves the result as it was and says why in `error`.
 */
export async function checkpointEpisode(
  result: EpisodeResult,
  cp: EpisodeCheckpoint,
): Promise<{ result: EpisodeResult; error?: string }> {
  if (!wantsCheckpoint(cp.dir, result)) return { result };
  const outcome = checkpointOutcome(result, cp.completion, cp.episode);
  const made = await commitCheckpoint({ ...cp, outcome });
  if (!made.ok) return { result, error: made.message };
  const ws = result.evidence?.workspace;
  const commit = made.commit ?? (ws?.headAfter && ws.headAfter !== ws.headBefore ? ws.headAfter : undefined);
  if (!commit || !ws) return { result };
  return { result: { ...result, evidence: { ...result.evidence, workspace: { ...ws, commit } } } };
}

type GitRun = (
  args: string[],
  allowExit?: number[],
  env?: Record<string, string>,
) => Promise<{ code: number; stdout: string }>;

function gitRunner(req: CheckpointRequest): GitRun {
  return async (args, allowExit = [], env = {}) => {
    const { execa } = await import('execa');
    const r = await execa('git', [...SAFE_CONFIG, ...args], {
      cwd: req.dir,
      env: { GIT_TERMINAL_PROMPT: '0', GIT_EDITOR: 'true', ...req.env, ...env },
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
