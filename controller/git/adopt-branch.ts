// Best-of-N's last step in git (issue 32 §2): the winner's branch becomes the task's own. The task's clone
// is brought to its branch, fast-forwarded to the winner's and pushed, then the losers' branches are
// deleted on the remote. Every step is idempotent, so a controller killed half-way simply does it again.
import type { Adopted } from '../api/attempts.ts';
import { branchName, git, GitError, prepareGitWorkspace, pushGitWorkspace } from './git-workspace.ts';
import type { GitWorkspace } from './git-workspace.ts';

export type AdoptResult = { ok: true; adopted: Adopted } | { ok: false; message: string };

/** Throws for failures worth retrying (the network); returns why not for those that are not. keptBranches: the pass's. */
export async function adoptBranch(
  ws: GitWorkspace,
  from: string,
  deleteBranches: readonly string[],
): Promise<AdoptResult> {
  const into = branchName(ws.ref);
  const prepared = await prepareGitWorkspace(ws);
  if (!prepared.ok) return retryOr(prepared, `the task's clone of ${into}`);
  const fetched = await git(ws, ['fetch', '--quiet', 'origin', `refs/heads/${branchName(from)}`], {
    cwd: ws.dir,
    allowExit: [128],
  });
  if (fetched.code !== 0) return { ok: false, message: `the winner's branch ${from} is not on the remote` };
  const ff = await git(ws, ['merge', '--quiet', '--ff-only', 'FETCH_HEAD'], { cwd: ws.dir, allowExit: [1, 128] });
  if (ff.code !== 0)
    return { ok: false, message: `${into} moved since the attempts started: ${from} does not fast-forward it (kept)` };
  const pushed = await pushGitWorkspace(ws);
  if (!pushed.ok) return retryOr(pushed, `pushing ${into}`);
  const commit = (await git(ws, ['rev-parse', 'HEAD'], { cwd: ws.dir })).stdout.trim();
  const deleted = await deleteRemoteBranches(ws, deleteBranches);
  return { ok: true, adopted: { into, commit, deletedBranches: deleted, keptBranches: [] } };
}

/** Deletes those of `branches` the remote still has; the ones it deleted (or had deleted before). */
async function deleteRemoteBranches(ws: GitWorkspace, branches: readonly string[]): Promise<string[]> {
  if (branches.length === 0) return [];
  const heads = branches.map((b) => `refs/heads/${branchName(b)}`);
  const listed = await git(ws, ['ls-remote', '--heads', 'origin', ...heads], { cwd: ws.dir });
  const present = heads.filter((h) => listed.stdout.includes(`\t${h}\n`));
  if (present.length > 0) await git(ws, ['push', '--quiet', 'origin', '--delete', ...present], { cwd: ws.dir });
  return [...branches];
}

function retryOr(step: { errorClass: string; message: string }, what: string): AdoptResult {
  if (step.errorClass === 'transient') throw new GitError(`${what}: ${step.message}`, '', undefined);
  return { ok: false, message: `${what}: ${step.message}` };
}

/** What a clone's branch changed since it left `from` (its stat, then the patch); undefined when unknown. */
export async function branchDiff(dir: string, from: string): Promise<string | undefined> {
  const at = { cwd: dir, allowExit: [1, 128] };
  // `from` not pushed yet (a trigger item's episodic/N before its winner is adopted): the attempts started from
  // the default branch, as git-workspace.ts starts them.
  let base = await git({}, ['merge-base', 'HEAD', `refs/remotes/origin/${branchName(from)}`], at);
  if (base.code !== 0) base = await git({}, ['merge-base', 'HEAD', 'refs/remotes/origin/HEAD'], at);
  if (base.code !== 0) return undefined;
  const diff = await git(
    {},
    ['diff', '--no-color', '--no-ext-diff', '--stat', '--patch', base.stdout.trim(), 'HEAD'],
    at,
  );
  return diff.code === 0 ? diff.stdout : undefined;
}

/**
 * What `branch` on the remote changed since it left the clone's HEAD (stat, then patch), fetched into a clone
 * of the branch the attempts started from; undefined when the remote has no such branch.
 */
export async function remoteBranchDiff(ws: GitWorkspace, branch: string): Promise<string | undefined> {
  const at = { cwd: ws.dir, allowExit: [1, 128] };
  const fetched = await git(ws, ['fetch', '--quiet', 'origin', `refs/heads/${branchName(branch)}`], at);
  if (fetched.code !== 0) return undefined;
  const head = (await git(ws, ['rev-parse', 'FETCH_HEAD'], { cwd: ws.dir })).stdout.trim();
  const base = await git(ws, ['merge-base', 'HEAD', head], at);
  if (base.code !== 0) return undefined;
  const diff = await git(
    ws,
    ['diff', '--no-color', '--no-ext-diff', '--stat', '--patch', base.stdout.trim(), head],
    at,
  );
  return diff.code === 0 ? diff.stdout : undefined;
}
