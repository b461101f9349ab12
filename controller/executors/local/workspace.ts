// Local workspaces: a directory relative to the spec file that must stay inside the spec root, checked both
// lexically and after resolving symlinks (a link must not lead out either), and a promptFile inside it. The
// checks are one home: `episodic validate` and `run` (spec-checks.ts) ask them before anything runs, and the
// executor asks them again before every episode (an agent may have swapped its workspace for a symlink).
import { existsSync, lstatSync, mkdirSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { closest } from '../../api/validate-words.ts';
import type { AgentTaskSpec } from '../../api/agent-task.ts';
import { isInside } from '../../util/paths.ts';
import { stateWorkspaceDir, workspacesDir } from '../../util/state-layout.ts';
import { gitWorkspaceOf } from '../../api/git-workspace.ts';

export class WorkspaceError extends Error {}

/**
 * A task's local workspace directory: `dir` resolved against the spec file, and the `root` it must stay in
 * when that is not the spec directory; undefined for a git workspace.
 */
export type LocalWorkspace = { ws: string; dir: string; root?: string } | { problem: string } | undefined;

/** A task the system created (a trigger's, a spawned child's): its spec document is under the state dir. */
export interface CreatedIn {
  stateDir: string;
  namespace: string;
}

/**
 * The default is ws/NAME beside the spec file; a created task's is under the state dir, so the spec
 * directory (a GitOps checkout, say) never fills with agents' work.
 */
export function localWorkspace(
  specFile: string,
  name: string,
  spec: AgentTaskSpec,
  created?: CreatedIn,
): LocalWorkspace {
  if (spec.workspace === undefined && created) {
    const dir = stateWorkspaceDir(created.stateDir, created.namespace, name);
    return { ws: dir, dir, root: workspacesDir(created.stateDir) };
  }
  const ws = spec.workspace ?? join('ws', name);
  if (typeof ws === 'string') return { ws, dir: resolve(dirname(specFile), ws) };
  if (gitWorkspaceOf(ws)) return undefined;
  return {
    problem:
      'spec.workspace: volumeClaim workspaces work on a cluster only; locally use a directory or a git workspace',
  };
}

/**
 * What keeps a workspace directory from being used, naming the field; nothing is created. Lexically outside
 * the root, or — seen from the deepest part of its path that exists (the rest is created below it) — a
 * symlink on the way that leads out of the root or nowhere, or a file where a directory has to be.
 */
export function workspaceProblem(root: string, dir: string): string | undefined {
  if (!isInside(resolve(root), dir) && !(existsSync(root) && isInside(realpathSync.native(root), dir)))
    return `spec.workspace: resolves outside the spec directory ${root}`;
  if (!existsSync(root)) return undefined;
  const rootReal = realpathSync.native(root);
  let at = dir;
  while (!existsSync(at) && dirname(at) !== at) {
    if (isSymlink(at)) return `spec.workspace: passes through a symlink that leads nowhere (${at})`;
    at = dirname(at);
  }
  const real = realpathSync.native(at);
  if (!isInside(rootReal, real)) return `spec.workspace: leads outside the spec directory through a symlink (${real})`;
  if (!statSync(real).isDirectory()) return `spec.workspace: ${at} is a file, not a directory`;
  return undefined;
}

/** A workspace that does not exist yet beside one of a similar name: probably a typo ("ws/add-logn"). */
export function similarWorkspace(dir: string): string | undefined {
  const parent = dirname(dir);
  if (existsSync(dir) || !existsSync(parent) || !statSync(parent).isDirectory()) return undefined;
  const name = basename(dir);
  const siblings = readdirSync(parent, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
    .map((e) => e.name)
    // Numbered siblings (step-1, step-2) are a series, not a typo.
    .filter((n) => n.replace(/\d+/g, '') !== name.replace(/\d+/g, ''));
  const near = closest(name, siblings);
  return near && join(parent, near);
}

/**
 * What keeps the promptFile from being read, naming the field (a step's: spec.steps[1].promptFile).
 * `workspace` undefined: a git workspace not cloned yet, only the path itself can be checked.
 */
export function promptFileProblem(
  workspace: string | undefined,
  promptFile: string,
  field = 'spec.promptFile',
): string | undefined {
  if (isAbsolute(promptFile) || (workspace && !isInside(workspace, resolve(workspace, promptFile))))
    return `${field}: must be a path inside the workspace (${JSON.stringify(promptFile)})`;
  if (!workspace) return undefined;
  const file = resolve(workspace, promptFile);
  if (!existsSync(file)) {
    const empty = existsSync(workspace) ? '' : ` (the workspace ${workspace} does not exist yet: it is created empty)`;
    return `${field}: ${file} does not exist${empty}`;
  }
  const real = realpathSync.native(file);
  const wsReal = realpathSync.native(workspace);
  if (!isInside(wsReal, real)) return `${field}: "${promptFile}" leads outside the workspace (${real})`;
  if (!statSync(real).isFile()) return `${field}: ${file} is not a file`;
  return undefined;
}

/** Resolves and creates the workspace directory of a task; throws WorkspaceError naming the field. */
export async function prepareWorkspace(
  specRoot: string,
  specFile: string,
  name: string,
  spec: AgentTaskSpec,
  created?: CreatedIn,
): Promise<string> {
  const local = localWorkspace(specFile, name, spec, created);
  if (!local) throw new WorkspaceError('spec.workspace: a git workspace is prepared by its clone');
  if ('problem' in local) throw new WorkspaceError(local.problem);
  const root = local.root ?? specRoot;
  // The state dir's workspaces root is ours to create; the spec directory is the user's and exists.
  if (local.root) mkdirSync(local.root, { recursive: true });
  // Native realpath and mkdir are one system call each, cheaper synchronously than through the thread pool.
  const rootReal = realpathSync.native(root);
  const problem = workspaceProblem(root, local.dir);
  if (problem) throw new WorkspaceError(problem);
  mkdirInside(local.dir);
  const real = realpathSync.native(local.dir);
  if (!isInside(rootReal, real))
    throw new WorkspaceError(`spec.workspace: leads outside the spec directory through a symlink (${real})`);
  return real;
}

/**
 * Creates dir and its missing parents (workspaceProblem has proved the deepest existing one inside the
 * root). Each new one is made in a directory just made, so none but the checked ancestor is followed.
 */
function mkdirInside(dir: string): void {
  const missing: string[] = [];
  let at = dir;
  while (!existsSync(at)) {
    missing.unshift(at);
    at = dirname(at);
  }
  for (const d of missing) {
    try {
      mkdirSync(d);
    } catch (err) {
      // A symlink made since the check: never follow it.
      if ((err as NodeJS.ErrnoException).code === 'EEXIST')
        throw new WorkspaceError(`spec.workspace: passes through a symlink that leads nowhere (${d})`);
      throw err;
    }
  }
}

/** The prompt text: inline, or read from promptFile inside the workspace; field names it in a problem. */
export async function readPromptTemplate(
  workspace: string,
  spec: AgentTaskSpec,
  field = 'spec.promptFile',
): Promise<string> {
  if (spec.prompt !== undefined) return spec.prompt;
  const problem = promptFileProblem(workspace, spec.promptFile as string, field);
  if (problem) throw new WorkspaceError(problem);
  return readFile(realpathSync.native(resolve(workspace, spec.promptFile as string)), 'utf8');
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}
