// Which AgentCredentials a task's agent goes through (issue 29 §1): the one spec.agent.credentials names, else
// the one its namespace marks spec.default (as a PVC without storageClassName gets the default StorageClass),
// never one when the task says "none". Two defaults in a namespace are an error naming both, not a pick.
// Pure: the loops gather the namespace's AgentCredentials and call it; validate, run and the cluster agree.
import { NO_CREDENTIALS } from '../api/agent-credentials.ts';
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import type { CredentialsUsed } from '../api/agent-task-status.ts';
import { currentStep } from '../api/steps.ts';
import { warning } from './actions.ts';
import type { Action, Events } from './actions.ts';

/** One AgentCredentials of the namespace, as the loop found it; `where` names it in messages (file or object). */
export interface NamespaceCredentials {
  name: string;
  /** spec.default as written (an invalid document too: its task then fails to start, it does not go keyless). */
  isDefault: boolean;
  where: string;
}

export type CredentialsChoice =
  | { kind: 'use'; name: string; viaDefault: boolean }
  | { kind: 'none'; optedOut: boolean }
  | { kind: 'conflict'; message: string };

export const CREDENTIALS_CONFLICT = 'CredentialsDefaultConflict';

/** written: spec.agent.credentials as the task has it (a name, "none", or absent). */
export function chooseCredentials(
  written: string | undefined,
  inNamespace: readonly NamespaceCredentials[],
): CredentialsChoice {
  if (written === NO_CREDENTIALS) return { kind: 'none', optedOut: true };
  if (written !== undefined) return { kind: 'use', name: written, viaDefault: false };
  const defaults = defaultsOf(inNamespace);
  if (defaults.length === 0) return { kind: 'none', optedOut: false };
  if (defaults.length === 1) return { kind: 'use', name: defaults[0].name, viaDefault: true };
  return { kind: 'conflict', message: conflictMessage(defaults) };
}

/** Why the namespace has no one default (validate says it even when no task relies on it), or undefined. */
export function defaultsConflict(inNamespace: readonly NamespaceCredentials[]): string | undefined {
  const defaults = defaultsOf(inNamespace);
  return defaults.length > 1 ? conflictMessage(defaults) : undefined;
}

/**
 * The spec the executors and the reconciler read: spec.agent.credentials is the choice (absent: none). An
 * opt-out stays "none" as written, so the tasks it creates (spawn, forEach, attempts) inherit the opt-out.
 */
export function withChosenCredentials(spec: AgentTaskSpec, choice: CredentialsChoice): AgentTaskSpec {
  if (choice.kind === 'none' && choice.optedOut) return spec;
  const name = choice.kind === 'use' ? choice.name : undefined;
  if (name === spec.agent.credentials) return spec;
  const { credentials: _, ...agent } = spec.agent;
  return { ...spec, agent: name === undefined ? agent : { ...agent, credentials: name } };
}

// Sorted by name: the same message on every pass and in every mode, whatever order the objects were listed in.
const defaultsOf = (all: readonly NamespaceCredentials[]) =>
  all.filter((c) => c.isDefault && c.name !== NO_CREDENTIALS).sort((a, b) => (a.name < b.name ? -1 : 1));

function conflictMessage(defaults: readonly NamespaceCredentials[]): string {
  const named = defaults.map((d) => d.where).join(' and ');
  return `${defaults.length} AgentCredentials are the namespace default (spec.default: true): ${named}; keep one default, or name one in spec.agent.credentials`;
}

/** What status.credentials says of the episode about to start: the gateway's credentials, and whether by default. */
export function credentialsUsed(
  name: string | undefined,
  choice: CredentialsChoice | undefined,
): CredentialsUsed | undefined {
  if (name === undefined) return undefined;
  const byDefault = choice?.kind === 'use' && choice.viaDefault && choice.name === name;
  return byDefault ? { name, namespaceDefault: true } : { name };
}

/** A step that names its own credentials chose them, even when they are the namespace default's. */
export function stepNamesCredentials(spec: AgentTaskSpec, status: AgentTaskStatus): boolean {
  const step = currentStep(spec, status);
  return step !== undefined && spec.steps?.[step.index - 1]?.agent?.credentials !== undefined;
}

/** Two defaults: the task waits (a person removes one), said once as a warning event; undefined: no conflict. */
export function credentialsConflictHold(
  status: AgentTaskStatus,
  choice: CredentialsChoice | undefined,
): { status: AgentTaskStatus; events: Events } | undefined {
  if (choice?.kind !== 'conflict') return undefined;
  const said = status.reason === CREDENTIALS_CONFLICT && status.message === choice.message;
  return {
    status: { ...status, phase: 'Waiting', reason: CREDENTIALS_CONFLICT, message: choice.message },
    events: said ? [] : [warning(CREDENTIALS_CONFLICT, choice.message)],
  };
}

/** The task as reconcile() and the executors see it: spec.agent.credentials is the one chosen; and the choice. */
export function withCredentialsChosen<T extends { spec?: AgentTaskSpec }>(
  task: T,
  inNamespace: readonly NamespaceCredentials[],
): { task: T; choice: CredentialsChoice | undefined } {
  if (!task.spec) return { task, choice: undefined };
  const choice = chooseCredentials(task.spec.agent.credentials, inNamespace);
  const spec = withChosenCredentials(task.spec, choice);
  return { task: spec === task.spec ? task : { ...task, spec }, choice };
}

/**
 * The tasks a task creates (forEach items, attempts, spawn ops) take its credentials as it wrote them: a default
 * it relied on is left out, so each child resolves the namespace default itself and says so (status
 * namespaceDefault). Spawned children are planned when the ops are applied: their action names the default.
 */
export function childrenAsWritten(actions: Action[], choice: CredentialsChoice | undefined): Action[] {
  if (choice?.kind !== 'use' || !choice.viaDefault) return actions;
  return actions.map((a) => {
    if (a.type === 'CreateTasks') return { ...a, tasks: a.tasks.map((t) => withoutDefault(t, choice.name)) };
    if (a.type === 'ApplyOps' && a.ops.some((o) => o.op === 'spawn')) return { ...a, credentialsDefault: choice.name };
    return a;
  });
}

/** The task its spawn ops plan children from: the default it relied on (childrenAsWritten) left out. */
export function spawnParentAsWritten<T extends { spec?: AgentTaskSpec }>(task: T, credentialsDefault?: string): T {
  if (!task.spec || credentialsDefault === undefined) return task;
  return { ...task, spec: withoutDefault({ spec: task.spec }, credentialsDefault).spec };
}

function withoutDefault<T extends { spec: Record<string, unknown> }>(child: T, name: string): T {
  const agent = child.spec.agent as { credentials?: string } | undefined;
  if (agent?.credentials !== name) return child;
  const { credentials: _, ...rest } = agent;
  return { ...child, spec: { ...child.spec, agent: rest } };
}
