// `workspace: {git: {url, ref}}` locally: cloned under the state directory (workspaces/NAMESPACE/NAME) by
// the first episode, brought up to date from the remote by every later one, and pushed after each like
// the runner does in a pod, so a spec that names a git workspace runs unchanged in both places. git uses
// your own credentials here (ssh agent, credential helper); `secretRef` is for the cluster.
import { dirname, isAbsolute, resolve } from 'node:path';
import type { ErrorClass } from '../../api/episode-result.ts';
import { gitRefProblem, gitUrlProblem } from '../../api/agent-task.ts';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { JUDGE_DIFF_MAX } from '../../api/attempts.ts';
import { adoptBranch, branchDiff } from '../../git/adopt-branch.ts';
import type { AdoptResult } from '../../git/adopt-branch.ts';
import { prepareGitWorkspace, pushGitWorkspace } from '../../git/git-workspace.ts';
import type { GitStep, GitWorkspace } from '../../git/git-workspace.ts';
import { stateWorkspaceDir } from '../../util/state-layout.ts';

export interface LocalGitSpec {
  url: string;
  ref: string;
  from?: string;
}

export class GitWorkspaceError extends Error {
  readonly errorClass: ErrorClass;
  constructor(message: string, errorClass: ErrorClass) {
    super(message);
    this.errorClass = errorClass;
  }
}

/** A relative path is a repository beside the spec file; URLs and scp-like `host:path` stay as written. */
export function resolveGitUrl(url: string, specFile: string): string {
  const hasScheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(url);
  const colon = url.indexOf(':');
  const slash = url.indexOf('/');
  const scpLike = colon > 0 && (slash < 0 || colon < slash);
  return hasScheme || scpLike || isAbsolute(url) ? url : resolve(dirname(specFile), url);
}

function workspaceOf(
  stateDir: string,
  namespace: string,
  name: string,
  specFile: string,
  git: LocalGitSpec,
): GitWorkspace {
  const problem = gitUrlProblem(git.url) ?? gitRefProblem(git.ref) ?? (git.from ? gitRefProblem(git.from) : undefined);
  if (problem) throw new GitWorkspaceError(`spec.workspace.git: ${problem}`, 'fatal');
  return {
    url: resolveGitUrl(git.url, specFile),
    ref: git.ref,
    from: git.from,
    dir: stateWorkspaceDir(stateDir, namespace, name),
    log: () => undefined, // failures come back as the step's message, into the episode's result
  };
}

/** Clone or update the task's clone; its directory, or a GitWorkspaceError classed like the runner's. */
export async function prepareLocalGitWorkspace(
  stateDir: string,
  namespace: string,
  name: string,
  specFile: string,
  git: LocalGitSpec,
): Promise<string> {
  const ws = workspaceOf(stateDir, namespace, name, specFile, git);
  const step = await prepareGitWorkspace(ws);
  if (!step.ok) throw new GitWorkspaceError(step.message, step.errorClass);
  return ws.dir;
}

export async function pushLocalGitWorkspace(
  stateDir: string,
  namespace: string,
  name: string,
  specFile: string,
  git: LocalGitSpec,
): Promise<GitStep> {
  return pushGitWorkspace(workspaceOf(stateDir, namespace, name, specFile, git));
}

/** Best-of-N: the task's clone fast-forwarded to the winner's branch and pushed; the losers' deleted. */
export async function adoptLocalWinner(
  stateDir: string,
  namespace: string,
  name: string,
  specFile: string,
  git: LocalGitSpec,
  action: { from: string; deleteBranches: readonly string[] },
): Promise<AdoptResult> {
  return adoptBranch(workspaceOf(stateDir, namespace, name, specFile, git), action.from, action.deleteBranches);
}

/** Best-of-N's judge: each attempt's diff in its own clone, against the branch the attempts started from. */
export async function localAttemptDiffs(
  stateDir: string,
  namespace: string,
  git: LocalGitSpec,
  attempts: readonly { number: number; task: string }[],
): Promise<Record<number, string>> {
  const out: Record<number, string> = {};
  for (const a of attempts) {
    const dir = stateWorkspaceDir(stateDir, namespace, a.task);
    const diff = existsSync(join(dir, '.git')) ? await branchDiff(dir, git.from ?? git.ref) : undefined;
    if (diff !== undefined) out[a.number] = diff.slice(0, JUDGE_DIFF_MAX);
  }
  return out;
}
