// Local workspaces: a directory relative to the spec file that must stay inside the spec root,
// checked both lexically and after resolving symlinks (a link must not lead out either).
import { existsSync, mkdirSync, realpathSync } from 'node:fs';
import { readFile, realpath } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { isInside } from '../../util/paths.ts';
import type { AgentTaskSpec } from '../../api/agent-task.ts';

export class WorkspaceError extends Error {}

/** Resolves and creates the workspace directory of a task; throws WorkspaceError naming the field. */
export async function prepareWorkspace(
  root: string,
  specFile: string,
  name: string,
  spec: AgentTaskSpec,
): Promise<string> {
  const ws = spec.workspace ?? join('ws', name);
  if (typeof ws !== 'string') {
    throw new WorkspaceError(
      'spec.workspace: volumeClaim workspaces work on a cluster only; locally use a directory or a git workspace',
    );
  }
  // Checked before every episode (an agent may have swapped its workspace for a symlink); native realpath
  // and mkdir are one system call each, cheaper synchronously than through the thread pool.
  const rootReal = realpathSync.native(root);
  const dir = resolve(dirname(specFile), ws);
  if (!isInside(resolve(root), dir) && !isInside(rootReal, dir)) {
    throw new WorkspaceError(`spec.workspace: "${ws}" resolves outside the spec directory ${root}`);
  }
  mkdirInside(rootReal, dir, ws);
  const real = realpathSync.native(dir);
  if (!isInside(rootReal, real)) {
    throw new WorkspaceError(`spec.workspace: "${ws}" leads outside the spec directory through a symlink (${real})`);
  }
  return real;
}

/**
 * Creates dir and its missing parents only after the deepest existing one proved to be inside the root: a
 * symlink on the way must not get a directory made outside it. Each new one is made in a directory just
 * made, so none but the checked ancestor is followed.
 */
function mkdirInside(rootReal: string, dir: string, ws: string): void {
  const missing: string[] = [];
  let at = dir;
  while (!existsSync(at)) {
    missing.unshift(at);
    at = dirname(at);
  }
  const real = realpathSync.native(at);
  if (!isInside(rootReal, real)) {
    throw new WorkspaceError(`spec.workspace: "${ws}" leads outside the spec directory through a symlink (${real})`);
  }
  for (const d of missing) {
    try {
      mkdirSync(d);
    } catch (err) {
      // A dangling symlink looks missing to existsSync and makes mkdir fail: never follow it.
      if ((err as NodeJS.ErrnoException).code === 'EEXIST')
        throw new WorkspaceError(`spec.workspace: "${ws}" passes through a symlink that leads nowhere (${d})`);
      throw err;
    }
  }
}

/** The prompt text: inline, or read from promptFile inside the workspace. */
export async function readPromptTemplate(workspace: string, spec: AgentTaskSpec): Promise<string> {
  if (spec.prompt !== undefined) return spec.prompt;
  const file = resolve(workspace, spec.promptFile as string);
  if (!isInside(workspace, file))
    throw new WorkspaceError(`spec.promptFile: "${spec.promptFile}" is outside the workspace`);
  const real = await realpath(file).catch(() => {
    throw new WorkspaceError(`spec.promptFile: ${file} does not exist`);
  });
  if (!isInside(workspace, real))
    throw new WorkspaceError(`spec.promptFile: "${spec.promptFile}" leads outside the workspace`);
  return readFile(real, 'utf8');
}
