// What `episodic send`, `suspend`/`unsuspend` and `resume` share: who is asking, and (locally) which task of
// the spec directory, or the tasks other tasks created, a name means.
import { userInfo } from 'node:os';
import { resolve } from 'node:path';
import { resolveStateDir } from '../util/state-layout.ts';
import type { SpecTask } from '../sources/local/spec-files.ts';

/** The person at the keyboard, for the audit trail; `fallback` where the system cannot say. */
export function userName(fallback: string): string {
  try {
    return userInfo().username || fallback;
  } catch {
    return process.env.USER ?? fallback;
  }
}

export interface LocalTask {
  dir: string;
  stateDir: string;
  task: SpecTask | undefined;
}

/** Resolves DIR and the state directory (default DIR/.episodic) and looks the task up in both. */
export async function findLocalTask(
  dirArg: string,
  stateDirArg: string | undefined,
  namespace: string,
  name: string,
): Promise<LocalTask> {
  // Loaded on use: `episodic --help` and the cluster paths need none of it.
  const { loadSpecDir } = await import('../sources/local/spec-files.ts');
  const { withCreatedTasks } = await import('../sources/local/created-tasks.ts');
  const dir = resolve(dirArg);
  const stateDir = resolveStateDir(dir, stateDirArg);
  const task = withCreatedTasks(await loadSpecDir(dir), stateDir).tasks.get(`${namespace}/${name}`);
  return { dir, stateDir, task };
}
