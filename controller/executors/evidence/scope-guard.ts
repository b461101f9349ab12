// skipWhen and scope where the workspace is: a local episode's executor, or the runner in the episode pod.
// The facts are gathered here (does the path exist, the plan file's counts, which paths the episode changed)
// and judged by the pure rules of reconciler/scope.ts; a Revert restores what it can (README "Scope").
import { existsSync, realpathSync } from 'node:fs';
import { lstat, readdir, rm, rmdir } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type { EpisodeResult } from '../../api/episode-result.ts';
import type { Scope, SkipWhen } from '../../api/scope.ts';
import { scopeFacts, scopeViolations, skipWhenPath, skipWhenVerdict } from '../../reconciler/scope.ts';
import { isInside } from '../../util/paths.ts';
import { readChecklist } from './checklist.ts';
import { excludePathspecs } from './workspace.ts';
import { DEFAULT_STATE_DIR_NAME } from '../../util/state-layout.ts';

const GIT_TIMEOUT_MS = 30_000;
const WALK_CAP = 10_000;
const SKIP = new Set(['.git', 'node_modules', DEFAULT_STATE_DIR_NAME]);
// git's empty tree: the base of a repository without a commit yet.
const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

/** A path inside the workspace, symlinks followed as far as it exists; undefined when it leads out. */
function inside(workspace: string, path: string): string | undefined {
  const root = resolve(workspace);
  const full = resolve(root, path);
  if (!isInside(root, full)) return undefined;
  try {
    const real = realpathSync.native(full);
    return isInside(realpathSync.native(root), real) ? real : undefined;
  } catch {
    return full; // does not exist (yet): lexically inside is all there is to check
  }
}

/** Why the step is skipped (its skipWhen holds in the workspace), or undefined when it runs. */
export function checkSkipWhen(workspace: string, skipWhen: SkipWhen | undefined): string | undefined {
  if (!skipWhen) return undefined;
  const path = inside(workspace, skipWhenPath(skipWhen));
  const exists = path !== undefined && existsSync(path);
  const checklist = exists && skipWhen.checklistPending ? readChecklist(path) : undefined;
  return skipWhenVerdict(skipWhen, { exists, checklist });
}

/** What the workspace looked like when the episode started: enough to list what it changed, and to revert. */
export type ScopeBaseline =
  | { kind: 'git'; base: string; dirty: Set<string>; exclude: string[] }
  | { kind: 'directory'; entries: Map<string, string>; truncated: boolean };

export async function scopeBaseline(dir: string, exclude: string[] = []): Promise<ScopeBaseline | undefined> {
  try {
    if (existsSync(join(dir, '.git'))) {
      const head = (await git(dir, ['rev-parse', '--verify', '-q', 'HEAD']).catch(() => '')).trim();
      const status = await git(dir, ['status', '--porcelain=v1', '-z', '--untracked-files=all']);
      return { kind: 'git', base: head || EMPTY_TREE, dirty: new Set(porcelainPaths(status)), exclude };
    }
    return { kind: 'directory', ...(await walk(dir, exclude)) };
  } catch {
    return undefined; // no baseline: the scope is not judged for this episode (the result says nothing)
  }
}

/** The paths the episode changed, relative to the workspace; paths already uncommitted at its start are not its. */
export async function changedPaths(dir: string, before: ScopeBaseline, exclude: string[] = []): Promise<string[]> {
  if (before.kind === 'git') {
    const spec = ['--', '.', ...excludePathspecs(dir, before.exclude)];
    const diff = await git(dir, ['diff', '--name-only', '-z', '--no-renames', before.base, ...spec]);
    const untracked = await git(dir, ['ls-files', '--others', '--exclude-standard', '-z', ...spec]);
    const all = [...diff.split('\0'), ...untracked.split('\0')].filter((p) => p !== '');
    return [...new Set(all)].filter((p) => !before.dirty.has(p));
  }
  const after = await walk(dir, exclude);
  const out: string[] = [];
  for (const [path, sig] of after.entries) if (before.entries.get(path) !== sig) out.push(path);
  for (const path of before.entries.keys()) if (!after.entries.has(path)) out.push(path);
  return out;
}

/**
 * Judge the episode's changes against its scope; with Revert, restore the violating paths: a git workspace to
 * the episode's start commit (new files deleted); a plain directory keeps no copy, so only new files can be
 * deleted and changed or deleted ones are reported unrestored. The result gets the scope facts.
 */
export async function enforceScope(
  dir: string,
  scope: Scope | undefined,
  allowed: readonly string[],
  before: ScopeBaseline | undefined,
  result: EpisodeResult,
  exclude: string[] = [],
): Promise<EpisodeResult> {
  if (!scope || !before || result.skipped) return result;
  let violations: string[];
  try {
    violations = scopeViolations(await changedPaths(dir, before, exclude), scope, allowed);
  } catch {
    return result; // best effort, like all evidence
  }
  if (violations.length === 0) return result;
  const unrestored = scope.onViolation === 'Revert' ? await revert(dir, before, violations) : [];
  return { ...result, scope: scopeFacts(scope, violations, unrestored) };
}

/** Restores the paths; returns those it could not. */
async function revert(dir: string, before: ScopeBaseline, paths: string[]): Promise<string[]> {
  if (before.kind === 'git') return revertGit(dir, before.base, paths);
  const unrestored: string[] = [];
  for (const path of paths) {
    // New files can go; a changed or deleted file's old content was never kept.
    if (before.entries.has(path)) unrestored.push(path);
    else if (!(await removeFile(dir, path))) unrestored.push(path);
  }
  return unrestored;
}

async function revertGit(dir: string, base: string, paths: string[]): Promise<string[]> {
  try {
    const known = new Set(
      base === EMPTY_TREE
        ? []
        : (await git(dir, ['--literal-pathspecs', 'ls-tree', '-r', '-z', '--name-only', base, '--', ...paths]))
            .split('\0')
            .filter((p) => p !== ''),
    );
    const restore = paths.filter((p) => known.has(p));
    const added = paths.filter((p) => !known.has(p));
    if (restore.length > 0) await git(dir, ['--literal-pathspecs', 'checkout', base, '--', ...restore]);
    if (added.length > 0)
      await git(dir, ['--literal-pathspecs', 'rm', '-r', '-q', '--cached', '--ignore-unmatch', '--', ...added]);
    const unrestored: string[] = [];
    for (const p of added) if (!(await removeFile(dir, p))) unrestored.push(p);
    return unrestored;
  } catch {
    return paths;
  }
}

/** Deletes a file the episode added (never a directory or anything outside), and its parents left empty. */
async function removeFile(dir: string, path: string): Promise<boolean> {
  const root = resolve(dir);
  const full = resolve(root, path);
  if (!isInside(root, full) || full === root) return false;
  try {
    const s = await lstat(full).catch(() => undefined);
    if (s?.isDirectory()) return false;
    if (s) await rm(full, { force: true });
    for (let parent = dirname(full); parent !== root && isInside(root, parent); parent = dirname(parent)) {
      if ((await readdir(parent)).length > 0) break;
      await rmdir(parent);
    }
    return true;
  } catch {
    return false;
  }
}

/** The files of a plain directory, path → "size mtime", bounded like the evidence walk. */
async function walk(root: string, exclude: string[]): Promise<{ entries: Map<string, string>; truncated: boolean }> {
  const skipped = new Set(exclude.map((p) => resolve(p)));
  const entries = new Map<string, string>();
  const todo = [resolve(root)];
  let seen = 0;
  while (todo.length > 0) {
    const dir = todo.pop() as string;
    for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (++seen > WALK_CAP) return { entries, truncated: true };
      const path = join(dir, e.name);
      if (SKIP.has(e.name) || skipped.has(path)) continue;
      if (e.isDirectory()) {
        todo.push(path);
        continue;
      }
      const s = await lstat(path).catch(() => undefined);
      entries.set(relative(root, path).split(sep).join('/'), `${s?.size ?? -1} ${s?.mtimeMs ?? -1}`);
    }
  }
  return { entries, truncated: false };
}

/** Paths in `git status --porcelain=v1 -z` (a rename's source follows its entry and is listed too). */
function porcelainPaths(status: string): string[] {
  const parts = status.split('\0');
  const out: string[] = [];
  for (let i = 0; i < parts.length; i++) {
    const entry = parts[i];
    if (entry.length < 4) continue;
    out.push(entry.slice(3));
    if (entry[0] === 'R' || entry[0] === 'C') out.push(parts[++i] ?? '');
  }
  return out;
}

async function git(dir: string, args: string[]): Promise<string> {
  const { execa } = await import('execa');
  const { stdout } = await execa('git', ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', ...args], {
    cwd: dir,
    timeout: GIT_TIMEOUT_MS,
    env: { GIT_OPTIONAL_LOCKS: '0', GIT_TERMINAL_PROMPT: '0' },
    stripFinalNewline: false,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}
