// Pushing a workspace's work to the forge and opening (or updating) its pull request. The token reaches git
// through the runner's credential helper (git/git-credentials.ts): never argv, a URL or git's output.
import { execFile } from 'node:child_process';
import { clip } from '../api/bounds.ts';
import type { GitCredentials } from '../git/git-credentials.ts';
import { gitEnvironment, redactCredentials } from '../git/git-credentials.ts';
import type { Forge, PullRequestInput, PullRequestRef } from './types.ts';
import { ForgeRequestError, ForgeUnavailableError } from './types.ts';

/** The branch a task's work goes to: episodic/NUMBER (the number is ours, not item text). */
export function itemBranch(number: number): string {
  if (!Number.isSafeInteger(number) || number <= 0) throw new Error(`not an item number: ${number}`);
  return `episodic/${number}`;
}

export interface PushOptions {
  /** The git work tree. */
  workspace: string;
  /** https://host/OWNER/NAME.git, without credentials. */
  remoteUrl: string;
  branch: string;
  /** What to push; HEAD by default. */
  ref?: string;
  credentials: GitCredentials;
  /** Overwrite the branch (a re-run of the item rewrites its own branch). */
  force?: boolean;
  timeoutMs?: number;
}

const SAFE_REF = /^(?!-)(?!.*\.\.)[A-Za-z0-9._/-]{1,200}$/;

/** `git push REMOTE REF:refs/heads/BRANCH`; returns the pushed commit. Errors name no credential. */
export async function pushBranch(opts: PushOptions): Promise<{ commit: string }> {
  const ref = opts.ref ?? 'HEAD';
  if (!SAFE_REF.test(opts.branch) || !SAFE_REF.test(ref)) throw new Error('unsafe branch or ref name');
  if (/^[a-z][a-z0-9+.-]*:\/\/[^/]*@/i.test(opts.remoteUrl))
    throw new Error('the remote URL must not carry credentials');
  const env = { ...withoutGitConfig(process.env), ...gitEnvironment(opts.credentials) };
  const git = (args: string[]) => runGit(opts.workspace, args, env, opts);
  const commit = (await git(['rev-parse', '--verify', `${ref}^{commit}`])).trim();
  const args = ['push', '--quiet', '--porcelain'];
  if (opts.force) args.push('--force');
  args.push(opts.remoteUrl, `${commit}:refs/heads/${opts.branch}`);
  await git(args);
  return { commit };
}

/** Push the work, wait until the forge's API sees the branch, then find-or-create its pull request. */
export async function publishWork(
  forge: Forge,
  push: PushOptions,
  pull: Omit<PullRequestInput, 'head'>,
): Promise<PullRequestRef & { commit: string }> {
  const { commit } = await pushBranch(push);
  await forge.waitForBranch(push.branch);
  return { ...(await forge.ensurePullRequest({ ...pull, head: push.branch })), commit };
}

/** The caller's own GIT_CONFIG_* would shift the numbering gitEnvironment relies on. */
function withoutGitConfig(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !k.startsWith('GIT_CONFIG_')) out[k] = v;
  return out;
}

function runGit(cwd: string, args: string[], env: Record<string, string>, opts: PushOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd, env, timeout: opts.timeoutMs ?? 120_000 }, (err, stdout, stderr) => {
      if (!err) return resolve(stdout);
      const detail = redactCredentials(clip(`${stderr}`.trim() || err.message, 1000), opts.credentials);
      const what = `git ${args[0]}`;
      // A refused push (non-fast-forward, protected branch) will not change by retrying; anything else might.
      if (/\[rejected\]|\[remote rejected\]|403/.test(detail)) reject(new ForgeRequestError(`${what}: ${detail}`, 409));
      else reject(new ForgeUnavailableError(`${what}: ${detail}`));
    });
  });
}
