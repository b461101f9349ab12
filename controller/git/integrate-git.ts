// The merge queue's git steps (core/merge-queue-loop.ts carries them out): one clone per queue, a
// branch rebased onto `into` there, and `into` fast-forwarded on the remote by a plain push, which git
// refuses unless it is a fast-forward, so `into` never moves backwards (or, for a task with a pull request,
// the PR's head leased to the rebased commit for the forge to merge). argv only, no shell, no hooks.
import { existsSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CONFLICTS_TEXT_MAX, clipPrompt } from '../api/bounds.ts';
import type { GitCredentials } from './git-credentials.ts';
import { git, GitError } from './git-workspace.ts';

const NO_CREDENTIALS = {};
// Rebased commits keep their authors; the queue is their committer.
const COMMITTER = {
  GIT_COMMITTER_NAME: 'episodic merge queue',
  GIT_COMMITTER_EMAIL: 'merge-queue@episodic.invalid',
  GIT_AUTHOR_NAME: 'episodic merge queue',
  GIT_AUTHOR_EMAIL: 'merge-queue@episodic.invalid',
  GIT_EDITOR: 'true',
};
const MARKER = /^(<{7}|>{7})( |$)/m;
const INTO_REF = 'refs/mq/into';
const SRC_PREFIX = 'refs/mq/branches/';
// No process the queue does not need (bench/merge-queue): no auto maintenance or gc after a fetch, rebase or
// commit, no notes copied by a rebase. (The remote's receive-pack is the remote's: its gc is not ours to stop.)
const LEAN = [
  ['maintenance.auto', 'false'],
  ['gc.auto', '0'],
  ['notes.rewrite.rebase', 'false'],
].flatMap(([k, v]) => ['-c', `${k}=${v}`]);

/** Credentials (a cluster's git Secret) only for the commands that reach the remote. */
function run(dir: string, args: string[], allowExit?: number[], credentials?: GitCredentials) {
  return git(credentials ? { credentials } : NO_CREDENTIALS, [...LEAN, ...args], {
    cwd: dir,
    allowExit,
    env: COMMITTER,
  });
}

const srcRef = (branch: string) => `${SRC_PREFIX}${branch}`;

export async function ensureClone(dir: string, url: string, credentials?: GitCredentials): Promise<void> {
  if (existsSync(join(dir, '.git'))) return;
  await rm(dir, { recursive: true, force: true }); // a clone killed half-way
  await git(credentials ? { credentials } : NO_CREDENTIALS, ['clone', '--quiet', '--', url, dir]);
}

/** After a kill -9: no rebase in progress, no stale lock (the state lock says no other writer runs), a clean tree. */
export async function cleanClone(dir: string): Promise<void> {
  for (const lock of ['index.lock', 'HEAD.lock', 'refs/mq/into.lock', 'packed-refs.lock']) {
    await rm(join(dir, '.git', lock), { force: true });
  }
  await removeRefLocks(join(dir, '.git', SRC_PREFIX));
  if (existsSync(join(dir, '.git', 'rebase-merge')) || existsSync(join(dir, '.git', 'rebase-apply'))) {
    await run(dir, ['rebase', '--abort'], [1, 128]);
  }
  await run(dir, ['reset', '--quiet', '--hard'], [128]);
  await run(dir, ['clean', '-fdxq']);
}

/** A fetch killed mid-way leaves BRANCH.lock files under refs/mq/branches/ (branch names may have slashes). */
async function removeRefLocks(dir: string): Promise<void> {
  const entries = await readdir(dir, { recursive: true }).catch(() => [] as string[]);
  for (const e of entries) if (e.endsWith('.lock')) await rm(join(dir, e), { force: true });
}

export type RebaseResult = { ok: true } | { ok: false; files: string[]; markers: string };

/**
 * Fetch `into` and the branches about to be integrated in one process (each to refs/mq/branches/BRANCH); `into`'s
 * commit. A branch gone from the remote fails the whole fetch: then `into` and `branches[0]` alone.
 */
export async function fetchQueue(
  dir: string,
  into: string,
  branches: readonly string[],
  credentials?: GitCredentials,
): Promise<string> {
  const fetch = (names: readonly string[]) =>
    run(
      dir,
      [
        'fetch',
        '--quiet',
        '--no-tags',
        'origin',
        `+refs/heads/${into}:${INTO_REF}`,
        ...names.map((b) => `+refs/heads/${b}:${srcRef(b)}`),
      ],
      undefined,
      credentials,
    );
  await fetch(branches).catch(() => fetch(branches.slice(0, 1)));
  return refCommit(dir, INTO_REF);
}

/** A ref's commit: its loose file as fetch wrote it (no process), else rev-parse. */
async function refCommit(dir: string, ref: string): Promise<string> {
  const loose = await readFile(join(dir, '.git', ref), 'utf8').catch(() => '');
  if (/^[0-9a-f]{40,64}\n?$/.test(loose)) return loose.trim();
  return (await run(dir, ['rev-parse', '--verify', ref])).stdout.trim();
}

/** Rebase the fetched branch's commits onto `onto` (detached: no branch of ours moves). */
export async function rebaseBranch(dir: string, onto: string, branch: string): Promise<RebaseResult> {
  const res = await run(dir, ['rebase', '--quiet', onto, srcRef(branch)], [1]);
  return res.code === 0 ? { ok: true } : conflicts(dir);
}

async function conflicts(dir: string): Promise<RebaseResult> {
  const out = await run(dir, ['diff', '--name-only', '--diff-filter=U', '-z']);
  const files = out.stdout.split('\0').filter((f) => f.length > 0);
  return { ok: false, files, markers: await markerText(dir, files) };
}

/** The conflicted files' text (bounded): what a resolution episode sees in {{integrate.conflicts}}. */
async function markerText(dir: string, files: readonly string[], max = CONFLICTS_TEXT_MAX): Promise<string> {
  let text = '';
  for (const f of files) {
    const body = await readFile(join(dir, f), 'utf8').catch(() => '');
    text += `--- ${f}\n${body}\n`;
    if (text.length > max) return clipPrompt(text, max);
  }
  return text;
}

/** After a resolution episode: stage everything and go on with the rebase; conflicts again if markers remain. */
export async function continueRebase(dir: string, files: readonly string[]): Promise<RebaseResult> {
  for (const f of files) {
    const body = await readFile(join(dir, f), 'utf8').catch(() => '');
    if (MARKER.test(body)) return { ok: false, files: [...files], markers: await markerText(dir, files) };
  }
  await run(dir, ['add', '--all']);
  const res = await run(dir, ['rebase', '--continue'], [1]);
  return res.code === 0 ? { ok: true } : conflicts(dir);
}

/** After a gate's resolution episode: its changes become one more commit on top of the rebased branch. */
export async function commitAll(dir: string, message: string): Promise<void> {
  await run(dir, ['add', '--all']);
  await run(dir, ['commit', '--quiet', '--no-verify', '-m', message], [1]);
}

/** The detached HEAD's commit, read from .git/HEAD: no process. */
export async function headCommit(dir: string): Promise<string> {
  const head = (await readFile(join(dir, '.git', 'HEAD'), 'utf8')).trim();
  if (/^[0-9a-f]{40,64}$/.test(head)) return head;
  return (await run(dir, ['rev-parse', 'HEAD'])).stdout.trim();
}

/** Fast-forward `into` on the remote to `commit`; 'rejected' when `into` moved meanwhile (not a fast-forward). */
export async function pushInto(
  dir: string,
  commit: string,
  into: string,
  credentials?: GitCredentials,
): Promise<'pushed' | 'rejected'> {
  try {
    await run(dir, ['push', '--quiet', 'origin', `${commit}:refs/heads/${into}`], undefined, credentials);
    return 'pushed';
  } catch (err) {
    if (err instanceof GitError && /rejected|non-fast-forward|fetch first/i.test(err.stderr)) return 'rejected';
    throw err;
  }
}

/**
 * A pull request's head set to the rebased `commit` (the forge then merges it), only if the head is still what
 * the queue fetched and rebased: 'moved' when someone pushed to it since. Already at `commit` (a step redone
 * after a kill -9) is 'pushed'.
 */
export async function pushPullHead(
  dir: string,
  commit: string,
  branch: string,
  credentials?: GitCredentials,
): Promise<'pushed' | 'moved'> {
  const fetched = await refCommit(dir, srcRef(branch));
  const lease = `--force-with-lease=refs/heads/${branch}:${fetched}`;
  const res = await run(dir, ['push', '--quiet', lease, 'origin', `${commit}:refs/heads/${branch}`], [1], credentials);
  if (res.code === 0) return 'pushed';
  const remote = await run(dir, ['ls-remote', 'origin', `refs/heads/${branch}`], undefined, credentials);
  return remote.stdout.split('\t')[0]?.trim() === commit ? 'pushed' : 'moved';
}

/** Whether `into` on the remote already contains `commit` (a push that landed before a kill -9). */
export async function intoContains(
  dir: string,
  into: string,
  commit: string,
  credentials?: GitCredentials,
): Promise<boolean> {
  await fetchQueue(dir, into, [], credentials);
  const res = await run(dir, ['merge-base', '--is-ancestor', commit, INTO_REF], [1, 128]);
  return res.code === 0;
}

/** Whether `commit` still fast-forwards `into` on the remote (false: `into` moved since the rebase). */
export async function fastForwards(
  dir: string,
  into: string,
  commit: string,
  credentials?: GitCredentials,
): Promise<boolean> {
  await fetchQueue(dir, into, [], credentials);
  return (await run(dir, ['merge-base', '--is-ancestor', INTO_REF, commit], [1, 128])).code === 0;
}

/** Whether the clone has `commit` (a cluster's new leader clones afresh: a rebase it never pushed is not there). */
export async function hasCommit(dir: string, commit: string): Promise<boolean> {
  return (await run(dir, ['cat-file', '-e', `${commit}^{commit}`], [1, 128])).code === 0;
}

/**
 * A cluster's resolution episode runs in a pod, which cannot see this clone: the tree as it stands (markers
 * and all) becomes one commit on top of HEAD, pushed to `branch` for the pod to clone. The rebase stays.
 */
export async function pushScratch(dir: string, branch: string, credentials?: GitCredentials): Promise<void> {
  await run(dir, ['add', '--all']);
  const tree = (await run(dir, ['write-tree'])).stdout.trim();
  const message = 'episodic merge queue: the tree a resolution episode starts from';
  const commit = (await run(dir, ['commit-tree', tree, '-p', 'HEAD', '-m', message])).stdout.trim();
  await run(dir, ['push', '--quiet', '--force', 'origin', `${commit}:refs/heads/${branch}`], undefined, credentials);
}

/** A cluster's queue gates run in a pod: the rebased commit as it is goes to `branch` for the pod to clone. */
export async function pushHead(dir: string, branch: string, credentials?: GitCredentials): Promise<string> {
  const commit = await headCommit(dir);
  await run(dir, ['push', '--quiet', '--force', 'origin', `${commit}:refs/heads/${branch}`], undefined, credentials);
  return commit;
}

/** The pod's work on `branch` becomes this clone's tree (and index); then the branch is deleted. */
export async function takeScratch(dir: string, branch: string, credentials?: GitCredentials): Promise<void> {
  await run(
    dir,
    ['fetch', '--quiet', '--no-tags', 'origin', `+refs/heads/${branch}:refs/mq/scratch`],
    undefined,
    credentials,
  );
  await run(dir, ['read-tree', '--reset', '-u', 'refs/mq/scratch']);
  await dropScratch(dir, branch, credentials);
}

/** Deletes `branch` on the remote; gone already is fine. */
export async function dropScratch(dir: string, branch: string, credentials?: GitCredentials): Promise<void> {
  await run(dir, ['push', '--quiet', 'origin', `:refs/heads/${branch}`], [1], credentials);
}
