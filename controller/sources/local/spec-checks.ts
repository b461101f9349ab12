// Checks across a set of spec files that no single document can make on its own — the ones `run` would
// otherwise find only when an episode starts: a workspace or promptFile that leads out of its root or is
// not there, a dependsOn that names the task itself or closes a cycle, or names a task that is not there,
// an agent or gate command that will not start here, two namespace default AgentCredentials. One path, used by `episodic validate` and by `episodic run`
// when it loads DIR; the workspace and cycle checks are the executor's and the loop's own (one home each).
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import type { AgentTaskSpec } from '../../api/agent-task.ts';
import {
  localWorkspace,
  promptFileProblem,
  similarWorkspace,
  workspaceProblem,
} from '../../executors/local/workspace.ts';
import { stepSpec } from '../../api/steps.ts';
import { splitWords } from '../../api/argv-words.ts';
import { outputRefProblems } from '../../api/output-refs.ts';
import { formatIssuePath } from '../../api/validate.ts';
import { cycleMessage, cycleThrough } from '../../reconciler/dependencies.ts';
import { dependsOnAsWritten } from './spec-files.ts';
import type { SpecTask } from './spec-files.ts';
import { chooseCredentials, defaultsConflict } from '../../reconciler/credentials-choice.ts';
import type { NamespaceCredentials } from '../../reconciler/credentials-choice.ts';
import { namespaceCredentials } from './credentials-files.ts';
import type { SpecCredentials } from './credentials-files.ts';

export interface SpecCheckResult {
  /** The task will fail (run) or is refused (validate). */
  errors: string[];
  /** Legal, but probably not what was meant: a dependency that may still be added, a command not found here. */
  warnings: string[];
  /** The errors by task key: run keeps those tasks from starting. */
  byTask: Map<string, string[]>;
}

/**
 * root: the spec directory (for files given one by one, each file's own directory). credentials: the
 * AgentCredentials documents beside the tasks (the namespace default a task without a name uses).
 */
export function checkSpecSet(
  tasks: Iterable<SpecTask>,
  rootOf: (t: SpecTask) => string,
  credentials: Iterable<SpecCredentials> = [],
): SpecCheckResult {
  const out: SpecCheckResult = { errors: [], warnings: [], byTask: new Map() };
  const all = [...tasks];
  const inNamespace = credentialsByNamespace(all, [...credentials], out);
  // Every task as written, an invalid one too: the loop walks dependsOn as written (spec-dir-source.ts).
  const byNamespace = new Map<string, Map<string, SpecTask>>();
  for (const t of all)
    (byNamespace.get(t.namespace) ?? byNamespace.set(t.namespace, new Map()).get(t.namespace)!).set(t.name, t);
  for (const t of all) {
    const spec = t.spec;
    if (!spec) continue;
    const at = `${t.file}: AgentTask ${t.key}`;
    const fail = (problem: string) => {
      const line = `${at}: ${problem}`;
      out.errors.push(line);
      out.byTask.set(t.key, [...(out.byTask.get(t.key) ?? []), line]);
    };
    const warn = (problem: string) => out.warnings.push(`${at}: ${problem}`);
    const workspace = checkWorkspace(t, spec, resolve(rootOf(t)), fail, warn);
    for (const w of agentCommandWarnings(spec, workspace)) warn(w);
    for (const w of stepAgentCommandWarnings(spec, workspace)) warn(w);
    for (const w of gateCommandWarnings(spec, workspace)) warn(w);
    for (const w of outputRefProblems(spec).warnings) warn(`${formatIssuePath(w.path, 'spec')}: ${w.message}`);
    const tasks = byNamespace.get(t.namespace) as Map<string, SpecTask>;
    const cycle = cycleThrough(t.name, (name) => {
      const dep = tasks.get(name);
      return dep && dependsOnAsWritten(dep);
    });
    if (cycle) fail(cycleMessage(cycle));
    // The task relies on a namespace default that is not one (said once per namespace above; run fails the task).
    const choice = chooseCredentials(spec.agent.credentials, inNamespace.get(t.namespace) ?? []);
    if (choice.kind === 'conflict')
      out.byTask.set(t.key, [...(out.byTask.get(t.key) ?? []), `${at}: ${choice.message}`]);
    for (const dep of spec.dependsOn) {
      if (dep !== t.name && !tasks.has(dep))
        warn(`spec.dependsOn: no task ${t.namespace}/${dep} here; the task waits until one appears`);
    }
  }
  return out;
}

/** Each namespace's AgentCredentials; two defaults in one are an error whether a task relies on them or not. */
function credentialsByNamespace(
  tasks: readonly SpecTask[],
  credentials: readonly SpecCredentials[],
  out: SpecCheckResult,
): Map<string, NamespaceCredentials[]> {
  const byNamespace = new Map<string, NamespaceCredentials[]>();
  for (const ns of new Set([...tasks, ...credentials].map((x) => x.namespace))) {
    const here = namespaceCredentials(credentials, ns);
    byNamespace.set(ns, here);
    const conflict = defaultsConflict(here);
    if (conflict) out.errors.push(`namespace ${ns}: ${conflict}`);
  }
  return byNamespace;
}

/** The executor's own checks of workspace and promptFile; the workspace directory, when there is one to look at. */
function checkWorkspace(
  t: SpecTask,
  spec: AgentTaskSpec,
  root: string,
  fail: (problem: string) => void,
  warn: (problem: string) => void,
): string | undefined {
  const local = localWorkspace(t.file, t.name, spec);
  if (local && 'problem' in local) return void fail(local.problem);
  const problem = local && workspaceProblem(root, local.dir);
  if (problem) fail(problem);
  else if (local && typeof spec.workspace === 'string') {
    const near = similarWorkspace(local.dir);
    if (near) warn(`spec.workspace: ${local.dir} does not exist yet and will be created empty; did you mean ${near}?`);
  }
  const dir = problem ? undefined : local?.dir;
  if (spec.promptFile !== undefined) {
    const prompt = promptFileProblem(dir, spec.promptFile);
    if (prompt) fail(prompt);
  }
  spec.steps?.forEach((step, i) => {
    const prompt = step.promptFile && promptFileProblem(dir, step.promptFile, `spec.steps[${i}].promptFile`);
    if (prompt) fail(prompt);
  });
  return dir;
}

/** agentCommandWarnings for each step that sets its own command, run with the step's env (its PATH). */
function stepAgentCommandWarnings(spec: AgentTaskSpec, workspace: string | undefined): string[] {
  return (spec.steps ?? []).flatMap((step, i) =>
    step.agent?.command ? agentCommandWarnings(stepSpec(spec, i + 1), workspace, `spec.steps[${i}].agent.command`) : [],
  );
}

/**
 * Why the agent command will not start on this machine: warnings only, it may exist only in the episode
 * image. argv written as one string ("node -e '…'") is named with its split form.
 */
export function agentCommandWarnings(
  spec: AgentTaskSpec,
  workspace: string | undefined,
  field = 'spec.agent.command',
): string[] {
  return commandWarnings(spec.agent.command, spec.agent.env, workspace, field);
}

/** A gate's fix and check (argv[0]) as an agent command is checked: with its step's env, from the workspace. */
function gateCommandWarnings(spec: AgentTaskSpec, workspace: string | undefined): string[] {
  return (spec.steps ?? []).flatMap((step, i) => {
    const env = stepSpec(spec, i + 1).agent.env;
    return (step.gates ?? []).flatMap((gate, j) => {
      const at = `spec.steps[${i}].gates[${j}]`;
      const fix = gate.fix ? commandWarnings(gate.fix, env, workspace, `${at}.fix`) : [];
      return [...fix, ...commandWarnings(gate.check, env, workspace, `${at}.check`)];
    });
  });
}

function commandWarnings(
  argv: readonly string[],
  env: AgentTaskSpec['agent']['env'],
  workspace: string | undefined,
  field: string,
): string[] {
  const [program, ...rest] = argv;
  if (program === undefined) return [];
  if (/\s/.test(program.trim()) && !existsSync(program)) {
    const split = [...splitWords(program), ...rest];
    return [
      `${field}: ${JSON.stringify(program)} is one argv entry, run as one program name; as a list: ${JSON.stringify(split)}`,
    ];
  }
  if (program.includes('/')) {
    const file = isAbsolute(program) ? program : workspace && resolve(workspace, program);
    if (!file) return [];
    if (!existsSync(file))
      return [
        `${field}: ${file} does not exist${isAbsolute(program) ? '' : ' (a relative path runs from the workspace)'}`,
      ];
    return isExecutable(file) ? [] : [`${field}: ${file} is not an executable file`];
  }
  const path = env.find((e) => e.name === 'PATH')?.value ?? process.env.PATH ?? '';
  const dirs = path.split(delimiter).filter(Boolean);
  if (dirs.some((d) => isExecutable(join(d, program)))) return [];
  return [
    `${field}: ${JSON.stringify(program)} is not an executable on PATH here (it may exist only in the episode image)`,
  ];
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
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
