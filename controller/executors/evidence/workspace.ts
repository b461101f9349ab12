// Did the episode change its workspace? For a git repository the snapshot before is HEAD and `git status`
// (or nothing at all when the tree was clean at that HEAD after the last checkpoint); what changed is read
// from the checkpoint's own staging (checkpoint.ts). For a plain directory: a fingerprint of paths, sizes
// and mtimes, with a bounded walk (past the cap, changes further in are missed and the evidence says so).
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { clip } from '../../api/bounds.ts';
import { FILE_PATH_MAX, FILES_MAX } from '../../api/leash.ts';
import type { WorkspaceEvidence } from '../../api/leash.ts';
import { readHead } from '../../git/repo-files.ts';
import { DEFAULT_STATE_DIR_NAME } from '../../util/state-layout.ts';

const WALK_CAP = 10_000;
const SKIP = new Set(['.git', 'node_modules', DEFAULT_STATE_DIR_NAME]);
const GIT_TIMEOUT_MS = 10_000;

/** `status`: `git status --porcelain=v1 -z`, '' for a clean tree. */
export type GitSnapshot = { kind: 'git'; head?: string; status: string };
export type WorkspaceSnapshot = GitSnapshot | { kind: 'directory'; fingerprint: string; truncated: boolean };

/** A git workspace known to be clean at `head` (the last checkpoint left it so). */
export interface SettledTree {
  head?: string;
}

export interface SnapshotOptions {
  /** Never walked (the controller's state directory may sit inside a workspace). */
  exclude?: string[];
  /** How the last episode left the tree: while HEAD is still there, it is taken as clean without asking git. */
  settled?: SettledTree;
}

export async function snapshotWorkspace(
  dir: string,
  opts: SnapshotOptions = {},
): Promise<WorkspaceSnapshot | undefined> {
  try {
    if (existsSync(join(dir, '.git'))) {
      const head = await headOf(dir, (args) => git(dir, args));
      if (opts.settled && opts.settled.head === head) return { kind: 'git', head, status: '' };
      const pathspec = ['--', '.', ...excludePathspecs(dir, opts.exclude ?? [])];
      const status = await git(dir, ['status', '--porcelain=v1', '-z', ...pathspec]);
      return { kind: 'git', head, status };
    }
    return await fingerprint(
      dir,
      (opts.exclude ?? []).map((p) => resolve(p)),
    );
  } catch {
    return undefined; // no evidence is better than a wrong one: the breaker counts nothing for it
  }
}

/** HEAD's commit (undefined on an unborn branch): from the repository's files, from git when they do not say. */
export async function headOf(dir: string, run: (args: string[]) => Promise<string>): Promise<string | undefined> {
  const read = readHead(dir);
  if (read !== 'unknown') return read;
  const out = await run(['rev-parse', '--verify', '-q', 'HEAD']).catch(() => '');
  return out.trim() || undefined;
}

/** A plain directory's evidence: did its fingerprint change (git workspaces get theirs from the checkpoint). */
export function compareDirectories(before: WorkspaceSnapshot, after: WorkspaceSnapshot): WorkspaceEvidence | undefined {
  if (before.kind === 'git' && after.kind === 'git') return undefined;
  const truncated =
    (before.kind === 'directory' && before.truncated) || (after.kind === 'directory' && after.truncated);
  const changed =
    before.kind !== after.kind ||
    (before.kind === 'directory' && after.kind === 'directory' && before.fingerprint !== after.fingerprint);
  return { kind: 'directory', changed, ...(truncated ? { truncated } : {}) };
}

/** `git diff --shortstat` output (git run with LC_ALL=C) as counts; empty output is no change. */
export function parseShortstat(out: string): { filesChanged: number; insertions: number; deletions: number } {
  const num = (re: RegExp) => Number(re.exec(out)?.[1] ?? 0);
  return {
    filesChanged: num(/(\d+) files? changed/),
    insertions: num(/(\d+) insertions?/),
    deletions: num(/(\d+) deletions?/),
  };
}

/** `git diff --numstat -z --no-renames` output as the shortstat's counts plus the paths (binary files count 0). */
export function parseNumstat(out: string): ReturnType<typeof parseShortstat> & { files: string[] } {
  const stat = { filesChanged: 0, insertions: 0, deletions: 0, files: [] as string[] };
  for (const record of out.split('\0')) {
    const m = /^(\d+|-)\t(\d+|-)\t(.*)$/s.exec(record);
    if (!m) continue;
    stat.filesChanged++;
    stat.insertions += Number(m[1]) || 0;
    stat.deletions += Number(m[2]) || 0;
    stat.files.push(m[3] as string);
  }
  return { ...stat, files: boundedPaths(stat.files) };
}

/** The paths `git add --verbose` staged ("add 'p'", "remove 'p'" lines; git prints them unquoted). */
export function parseAddVerbose(out: string): string[] {
  const paths: string[] = [];
  for (const line of out.split('\n')) {
    const m = /^(?:add|remove) '(.*)'$/.exec(line);
    if (m) paths.push(m[1] as string);
  }
  return boundedPaths(paths);
}

/** The first FILES_MAX paths, each cut to FILE_PATH_MAX characters (an agent names them: bounded). */
export function boundedPaths(paths: string[]): string[] {
  return paths.slice(0, FILES_MAX).map((p) => clip(p, FILE_PATH_MAX));
}

/** git pathspecs that leave out the excluded paths inside the repository (the state directory, say). */
export function excludePathspecs(dir: string, exclude: string[]): string[] {
  const root = resolve(dir);
  return exclude
    .map((p) => relative(root, resolve(p)))
    .filter((rel) => rel !== '' && !rel.startsWith('..') && !isAbsolute(rel))
    .map((rel) => `:(exclude,top)${rel}`);
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
