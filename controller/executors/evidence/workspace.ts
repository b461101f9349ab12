// Did the episode change its workspace? For a git repository: HEAD and `git status` before and after, and
// the diffstat against the old HEAD. For a plain directory: a fingerprint of paths, sizes and mtimes, with
// a bounded walk (past the cap, changes further in are missed and the evidence says so).
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import type { WorkspaceEvidence } from '../../api/leash.ts';

const WALK_CAP = 10_000;
const SKIP = new Set(['.git', 'node_modules', '.episodic']);
const GIT_TIMEOUT_MS = 10_000;

export type WorkspaceSnapshot =
  | { kind: 'git'; head?: string; status: string }
  | { kind: 'directory'; fingerprint: string; truncated: boolean };

export interface SnapshotOptions {
  /** Never walked (the controller's state directory may sit inside a workspace). */
  exclude?: string[];
}

export async function snapshotWorkspace(
  dir: string,
  opts: SnapshotOptions = {},
): Promise<WorkspaceSnapshot | undefined> {
  try {
    if (existsSync(join(dir, '.git'))) {
      const pathspec = ['--', '.', ...excludePathspecs(dir, opts.exclude ?? [])];
      const [head, status] = await Promise.all([
        git(dir, ['rev-parse', '--verify', '-q', 'HEAD']).catch(() => ''),
        git(dir, ['status', '--porcelain=v1', '-z', ...pathspec]),
      ]);
      return { kind: 'git', head: head.trim() || undefined, status };
    }
    return await fingerprint(
      dir,
      (opts.exclude ?? []).map((p) => resolve(p)),
    );
  } catch {
    return undefined; // no evidence is better than a wrong one: the breaker counts nothing for it
  }
}

export async function compareWorkspace(
  dir: string,
  before: WorkspaceSnapshot,
  after: WorkspaceSnapshot,
): Promise<WorkspaceEvidence> {
  if (before.kind === 'directory' || after.kind === 'directory') {
    const truncated =
      (before.kind === 'directory' && before.truncated) || (after.kind === 'directory' && after.truncated);
    const changed =
      before.kind !== after.kind ||
      (before.kind === 'directory' && after.kind === 'directory' && before.fingerprint !== after.fingerprint);
    return { kind: 'directory', changed, ...(truncated ? { truncated } : {}) };
  }
  const changed = before.head !== after.head || before.status !== after.status;
  const evidence: WorkspaceEvidence = { kind: 'git', changed, dirty: after.status !== '' };
  if (before.head) evidence.headBefore = before.head;
  if (after.head) evidence.headAfter = after.head;
  if (changed && before.head) {
    const stat = await git(dir, ['diff', '--shortstat', before.head]).catch(() => '');
    const num = (re: RegExp) => Number(re.exec(stat)?.[1] ?? 0);
    evidence.filesChanged = num(/(\d+) files? changed/) + untracked(after.status);
    evidence.insertions = num(/(\d+) insertions?/);
    evidence.deletions = num(/(\d+) deletions?/);
  }
  return evidence;
}

/** git pathspecs that leave out the excluded paths inside the repository (the state directory, say). */
export function excludePathspecs(dir: string, exclude: string[]): string[] {
  const root = resolve(dir);
  return exclude
    .map((p) => relative(root, resolve(p)))
    .filter((rel) => rel !== '' && !rel.startsWith('..') && !isAbsolute(rel))
    .map((rel) => `:(exclude,top)${rel}`);
}

function untracked(porcelain: string): number {
  return porcelain.split('\0').filter((e) => e.startsWith('?? ')).length;
}

async function git(dir: string, args: string[]): Promise<string> {
  const { execa } = await import('execa');
  // No optional locks: the agent may be using the index at the same moment (it never should wait on us).
  const { stdout } = await execa('git', args, {
    cwd: dir,
    timeout: GIT_TIMEOUT_MS,
    env: { GIT_OPTIONAL_LOCKS: '0' },
    stripFinalNewline: false,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

async function fingerprint(root: string, exclude: string[]): Promise<WorkspaceSnapshot> {
  const hash = createHash('sha256');
  const todo = [root];
  let seen = 0;
  while (todo.length > 0) {
    const dir = todo.pop() as string;
    const entries = (await readdir(dir, { withFileTypes: true }).catch(() => [])).sort((a, b) =>
      a.name < b.name ? -1 : 1,
    );
    for (const e of entries) {
      if (++seen > WALK_CAP) return { kind: 'directory', fingerprint: hash.digest('hex'), truncated: true };
      const path = join(dir, e.name);
      if (SKIP.has(e.name) || exclude.includes(path)) continue;
      if (e.isDirectory()) {
        todo.push(path);
        hash.update(`d ${path}\0`);
        continue;
      }
      const s = await stat(path).catch(() => undefined);
      hash.update(`f ${path} ${s?.size ?? -1} ${s?.mtimeMs ?? -1}\0`);
    }
  }
  return { kind: 'directory', fingerprint: hash.digest('hex'), truncated: false };
}
