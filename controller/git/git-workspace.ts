// A git workspace around one episode: clone (or update an existing clone) before, push after (the commit
// is the checkpoint, executors/evidence/checkpoint.ts).
// Every episode starts from what the previous one pushed, so the repository is the agent's memory.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { ErrorClass } from '../api/episode-result.ts';
import { redact } from '../api/redaction.ts';
import { gitEnvironment } from './git-credentials.ts';
import type { GitCredentials } from './git-credentials.ts';

export interface GitWorkspace {
  url: string;
  /** A branch name (refs/heads/ is optional); created on the remote by the first push if missing. */
  ref: string;
  /** The branch a ref missing on the remote starts from (a fan-out child's parent branch); default: the remote's HEAD. */
  from?: string;
  dir: string;
  credentials?: GitCredentials;
  /** Progress lines for humans (stderr in the pod); already redacted. */
  log: (line: string) => void;
}

export type GitStep = { ok: true } | { ok: false; errorClass: ErrorClass; message: string };

const GIT_TIMEOUT_MS = 10 * 60_000;

/** Which of `branches` the remote has. */
async function remoteHeads(w: GitWorkspace, url: string, branches: readonly string[]): Promise<Set<string>> {
  const listed = await git(w, ['ls-remote', '--heads', '--', url, ...branches]);
  const refs = listed.stdout.split('\n').map((line) => line.split('\t')[1] ?? '');
  return new Set(branches.filter((b) => refs.includes(`refs/heads/${b}`)));
}

/** Clone `url` at `ref` into `dir`, or bring an existing clone up to date with the remote ref. */
export async function prepareGitWorkspace(ws: GitWorkspace): Promise<GitStep> {
  const { url, credentials } = withoutUserinfo(ws);
  const w = { ...ws, url, credentials };
  const branch = branchName(ws.ref);
  try {
    await mkdir(ws.dir, { recursive: true });
    const wanted = ws.from ? [branch, branchName(ws.from)] : [branch];
    const heads = await remoteHeads(w, url, wanted);
    const remoteHasRef = heads.has(branch);
    if (!existsSync(path.join(ws.dir, '.git'))) {
      w.log(`cloning ${redact(url)} (${branch}) into ${ws.dir}`);
      if (remoteHasRef) {
        await git(w, ['clone', '--quiet', '--branch', branch, '--single-branch', '--', url, ws.dir]);
      } else {
        // A new branch (or an empty repository): start it from `from` or, while that is not pushed yet either (an
        // attempt of a trigger item's task before episodic/N exists), the default branch as `from` itself would.
        const from = ws.from && heads.has(branchName(ws.from)) ? branchName(ws.from) : undefined;
        await git(w, ['clone', '--quiet', ...(from ? ['--branch', from] : []), '--', url, ws.dir]);
        await git(w, ['checkout', '--quiet', '-b', branch], { cwd: ws.dir });
      }
      return { ok: true };
    }
    w.log(`updating the existing clone in ${ws.dir} from ${redact(url)} (${branch})`);
    await git(w, ['remote', 'set-url', 'origin', url], { cwd: ws.dir });
    const hasLocalBranch =
      (await git(w, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], { cwd: ws.dir, allowExit: [1] }))
        .code === 0;
    if (!remoteHasRef) {
      await git(w, ['checkout', '--quiet', ...(hasLocalBranch ? [] : ['-b']), branch], { cwd: ws.dir });
      return { ok: true };
    }
    await git(w, ['fetch', '--quiet', 'origin', `refs/heads/${branch}`], { cwd: ws.dir });
    await git(w, ['checkout', '--quiet', ...(hasLocalBranch ? [branch] : ['-b', branch, 'FETCH_HEAD'])], {
      cwd: ws.dir,
    });
    // Keep local commits a dead episode could not push: fast-forward, else replay them on top.
    if (
      (await git(w, ['merge', '--quiet', '--ff-only', 'FETCH_HEAD'], { cwd: ws.dir, allowExit: [1, 128] })).code === 0
    ) {
      return { ok: true };
    }
    if ((await git(w, ['rebase', '--quiet', 'FETCH_HEAD'], { cwd: ws.dir, allowExit: [1, 128] })).code === 0) {
      return { ok: true };
    }
    await git(w, ['rebase', '--abort'], { cwd: ws.dir, allowExit: [1, 128] });
    return {
      ok: false,
      errorClass: 'fatal',
      message: `workspace ${ws.dir} has diverged from origin/${branch} and cannot be rebased; resolve it by hand`,
    };
  } catch (err) {
    return failure('git workspace setup failed', err, w);
  }
}

/** Push the branch (the checkpoint, or whatever the agent committed itself). */
export async function pushGitWorkspace(ws: GitWorkspace, opts: { pushTimeoutMs?: number } = {}): Promise<GitStep> {
  const { url, credentials } = withoutUserinfo(ws);
  const w = { ...ws, url, credentials };
  const branch = branchName(ws.ref);
  const born = await git(w, ['rev-parse', '--verify', '--quiet', 'HEAD'], { cwd: ws.dir, allowExit: [1] });
  if (born.code !== 0) return { ok: true };
  try {
    await git(w, ['push', '--quiet', '--', url, `HEAD:refs/heads/${branch}`], {
      cwd: ws.dir,
      timeoutMs: opts.pushTimeoutMs,
    });
    w.log(`pushed to ${redact(url)} (${branch})`);
    return { ok: true };
  } catch (err) {
    return failure('git push failed', err, w, 'transient');
  }
}

/** Environment for git commands on this workspace (credentials, no hooks, no prompts). */
export function gitWorkspaceEnv(ws: GitWorkspace): Record<string, string> {
  return gitEnvironment(withoutUserinfo(ws).credentials);
}

export function branchName(ref: string): string {
  return ref.replace(/^refs\/heads\//, '');
}

/** Credentials written into the URL would end up in .git/config, where the agent can read them. */
function withoutUserinfo(ws: GitWorkspace): { url: string; credentials?: GitCredentials } {
  let parsed: URL;
  try {
    parsed = new URL(ws.url);
  } catch {
    return { url: ws.url, credentials: ws.credentials }; // scp-like git@host:repo: nothing to strip
  }
  if (!parsed.password && !parsed.username) return { url: ws.url, credentials: ws.credentials };
  const fromUrl = parsed.password
    ? { username: decodeURIComponent(parsed.username), token: decodeURIComponent(parsed.password) }
    : undefined;
  parsed.username = '';
  parsed.password = '';
  return { url: parsed.toString(), credentials: ws.credentials ?? fromUrl };
}

export class GitError extends Error {
  readonly stderr: string;
  readonly code: number | string | undefined;
  constructor(message: string, stderr: string, code: number | string | undefined) {
    super(message);
    this.stderr = stderr;
    this.code = code;
  }
}

let gitProcesses = 0;

/** git processes this process has started (bench/merge-queue counts them per integration). */
export function gitProcessCount(): number {
  return gitProcesses;
}

/** One git command, argv only; exit codes in allowExit resolve, others reject with the stderr kept. */
export function git(
  ws: Pick<GitWorkspace, 'credentials'>,
  args: string[],
  opts: { cwd?: string; allowExit?: number[]; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<{ code: number; stdout: string }> {
  gitProcesses++;
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      args,
      {
        cwd: opts.cwd,
        env: { ...process.env, ...gitEnvironment(ws.credentials), ...opts.env },
        timeout: opts.timeoutMs ?? GIT_TIMEOUT_MS,
        maxBuffer: 16 * 1024 * 1024,
        encoding: 'utf8',
      },
      (err, stdout, stderr) => {
        const code = err ? (err as { code?: number | string }).code : 0;
        if (!err || (typeof code === 'number' && opts.allowExit?.includes(code))) {
          resolve({ code: typeof code === 'number' ? code : 0, stdout });
          return;
        }
        const why = err.killed ? 'timed out' : `exit ${code ?? err.signal}`;
        reject(new GitError(`git ${args[0]} failed (${why})`, stderr, code));
      },
    );
    child.stdin?.end();
  });
}

function failure(what: string, err: unknown, ws: GitWorkspace, errorClass?: ErrorClass): GitStep {
  const stderr = err instanceof GitError ? err.stderr : '';
  const detail = meaningfulLines(stderr) || (err instanceof Error ? err.message : String(err));
  const message = redact(`${what}: ${detail}`, [ws.credentials?.token]);
  ws.log(message);
  return { ok: false, errorClass: errorClass ?? classifyGitFailure(`${stderr}\n${detail}`), message };
}

/** Wrong credentials, a missing repository or a broken workspace will not fix themselves; the network might. */
function classifyGitFailure(detail: string): ErrorClass {
  const permanent =
    /authentication failed|could not read (username|password)|permission denied|repository .* not found|does not appear to be a git repository|already exists and is not an empty directory|invalid username or password|\b40[13]\b/i;
  return permanent.test(detail) ? 'fatal' : 'transient';
}

// git's stock advice and the "To <url>" line of push say nothing about this failure.
const BOILERPLATE = /^(hint:|to \S+$|please make sure you have the correct access rights|and the repository exists)/i;

function meaningfulLines(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !BOILERPLATE.test(l));
  return lines.slice(-4).join(' / ');
}
