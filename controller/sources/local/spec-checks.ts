// Checks across a set of spec files that no single document can make on its own — the ones `run` would
// otherwise find only when an episode starts: a workspace or promptFile that leads out of its root, a
// dependsOn that names the task itself or closes a cycle, or names a task that is not there. One path, used
// by `episodic validate` and by `episodic run` when it loads DIR.
import { existsSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { findCycle } from '../../reconciler/dependencies.ts';
import { isInside } from '../../util/paths.ts';
import type { SpecTask } from './spec-files.ts';

export interface SpecCheckResult {
  /** The task will fail (run) or is refused (validate). */
  errors: string[];
  /** Legal, but probably not what was meant: a dependency that may still be added. */
  warnings: string[];
  /** The errors by task key: run keeps those tasks from starting. */
  byTask: Map<string, string[]>;
}

/** root: the spec directory (for files given one by one, each file's own directory). */
export function checkSpecSet(tasks: Iterable<SpecTask>, rootOf: (t: SpecTask) => string): SpecCheckResult {
  const out: SpecCheckResult = { errors: [], warnings: [], byTask: new Map() };
  const all = [...tasks].filter((t) => t.spec);
  const names = new Map<string, Set<string>>();
  const graphs = new Map<string, Record<string, string[]>>();
  for (const t of all) {
    (names.get(t.namespace) ?? names.set(t.namespace, new Set()).get(t.namespace)!).add(t.name);
    (graphs.get(t.namespace) ?? graphs.set(t.namespace, {}).get(t.namespace)!)[t.name] = t.spec!.dependsOn;
  }
  for (const t of all) {
    const spec = t.spec!;
    const at = `${t.file}: AgentTask ${t.key}`;
    const fail = (line: string) => {
      out.errors.push(line);
      out.byTask.set(t.key, [...(out.byTask.get(t.key) ?? []), line]);
    };
    const root = resolve(rootOf(t));
    const ws =
      typeof spec.workspace === 'string'
        ? spec.workspace
        : spec.workspace === undefined
          ? join('ws', t.name)
          : undefined;
    const wsDir = ws === undefined ? undefined : resolve(dirname(t.file), ws);
    if (wsDir && !isInside(root, wsDir)) fail(`${at}: spec.workspace: resolves outside the spec directory ${root}`);
    else if (wsDir && existsSync(root)) {
      const problem = workspaceOnDisk(realpathSync(root), wsDir);
      if (problem) fail(`${at}: spec.workspace: ${problem}`);
    }
    if (
      spec.promptFile !== undefined &&
      (isAbsolute(spec.promptFile) || (wsDir && !isInside(wsDir, resolve(wsDir, spec.promptFile))))
    ) {
      fail(`${at}: spec.promptFile: must be a path inside the workspace`);
    }
    if (spec.dependsOn.includes(t.name)) fail(`${at}: spec.dependsOn: names the task itself`);
    else {
      const cycle = findCycle(t.name, graphs.get(t.namespace) ?? {});
      if (cycle) fail(`${at}: spec.dependsOn: a cycle ${cycle.join(' → ')}`);
    }
    for (const dep of spec.dependsOn) {
      if (dep !== t.name && !names.get(t.namespace)?.has(dep)) {
        out.warnings.push(
          `${at}: spec.dependsOn: no task ${t.namespace}/${dep} here; the task waits until one appears`,
        );
      }
    }
  }
  return out;
}

/**
 * What run's prepareWorkspace would refuse, seen from the deepest part of the workspace path that exists (the
 * rest is created below it): a symlink on the way that leads out of the root, or a file where a directory
 * has to be. Nothing is created here.
 */
function workspaceOnDisk(rootReal: string, wsDir: string): string | undefined {
  let at = wsDir;
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
  const real = realpathSync(at);
  if (!isInside(rootReal, real)) return `leads outside the spec directory through a symlink (${real})`;
  if (!statSync(real).isDirectory()) return `${at} is a file, not a directory`;
  return undefined;
}

/**
 * The loaded specs with every task that failed a check kept from running: no spec, the errors as its
 * specError (Failed, InvalidSpec, before any episode), as if the schema had refused it.
 */
export function withoutFailedChecks<T extends { tasks: Map<string, SpecTask> }>(
  loaded: T,
  checked: SpecCheckResult,
): T {
  if (checked.byTask.size === 0) return loaded;
  const tasks = new Map(loaded.tasks);
  for (const [key, errors] of checked.byTask) {
    const t = tasks.get(key);
    if (t) tasks.set(key, { ...t, spec: undefined, errors: [...t.errors, ...errors] });
  }
  return { ...loaded, tasks };
}
