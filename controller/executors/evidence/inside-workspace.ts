// A path the agent controls (a plan file, DISCOVERY.md) is read only if it stays inside the workspace.
import { realpathSync } from 'node:fs';
import { resolve, sep } from 'node:path';

/** The path if it stays inside the workspace, symlinks followed; else undefined (also when it is missing). */
export function insideWorkspace(workspace: string, path: string): string | undefined {
  try {
    const root = realpathSync(workspace);
    const real = realpathSync(resolve(root, path));
    return real === root || real.startsWith(root + sep) ? real : undefined;
  } catch {
    return undefined;
  }
}
