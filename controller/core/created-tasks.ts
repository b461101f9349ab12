// Tasks the system creates (a spawned child, a trigger's task): one port, a local and a cluster
// implementation. A created task is an ordinary AgentTask that names its owner — locally a spec document
// under the state dir (the user's spec files are never written), on a cluster an AgentTask with an
// ownerReference — so both modes run, show and delete it like any task. Its name is chosen by the caller
// and deterministic, which makes create() idempotent: the same owner creating the same name again is a no-op.
import { API_VERSION, KIND } from '../api/agent-task.ts';

/** Who may own created tasks, and the label that names the owner on each created task. */
export const OWNER_LABELS = {
  AgentTask: 'episodic.dev/parent',
  AgentTrigger: 'episodic.dev/trigger',
} as const;
export type OwnerKind = keyof typeof OWNER_LABELS;

export interface TaskOwner {
  kind: OwnerKind;
  namespace: string;
  name: string;
  /** Cluster: metadata.uid of the owner, for the ownerReference (garbage collection). */
  uid?: string;
  /** Local: the owner's spec file; relative paths of a created spec (its workspace) resolve against it. */
  file?: string;
}

/** A created task as the store has it. */
export interface CreatedTask {
  namespace: string;
  name: string;
  owner: { kind: OwnerKind; name: string };
  labels: Record<string, string>;
  /** The spec as created (not defaulted). */
  spec: Record<string, unknown>;
}

/** created: new; exists: this owner made it before (left as it is); taken: the name belongs to another task. */
export type CreateOutcome = { result: 'created' } | { result: 'exists' } | { result: 'taken'; message: string };

export interface CreatedTasks {
  /** Creates task `name` in the owner's namespace; never overwrites one. Throws only for errors worth retrying. */
  create(
    owner: TaskOwner,
    name: string,
    spec: Record<string, unknown>,
    labels?: Record<string, string>,
  ): Promise<CreateOutcome>;
  /** The tasks this owner created that still exist, by name. */
  list(owner: TaskOwner): Promise<CreatedTask[]>;
  /** Deletes one task this owner created (historyLimit, Replace); false when it is gone or another's. */
  delete(owner: TaskOwner, name: string): Promise<boolean>;
  /** Deletes every task the owner created (the owner is being deleted); returns their names. Idempotent. */
  deleteByOwner(owner: TaskOwner): Promise<string[]>;
}

/** The AgentTask manifest of a created task: the owner's label over the labels given, in the owner's namespace. */
export function createdManifest(
  owner: TaskOwner,
  name: string,
  spec: Record<string, unknown>,
  labels: Record<string, string> = {},
): { apiVersion: string; kind: string; metadata: CreatedMetadata; spec: Record<string, unknown> } {
  const metadata: CreatedMetadata = {
    name,
    namespace: owner.namespace,
    labels: { ...labels, [OWNER_LABELS[owner.kind]]: owner.name },
  };
  return { apiVersion: API_VERSION, kind: KIND, metadata, spec };
}

export interface CreatedMetadata {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: Array<Record<string, unknown>>;
}

/** The owner a created task's labels name, if any. */
export function ownerOf(labels: Readonly<Record<string, string>> | undefined): CreatedTask['owner'] | undefined {
  for (const [kind, label] of Object.entries(OWNER_LABELS) as Array<[OwnerKind, string]>) {
    const name = labels?.[label];
    if (name) return { kind, name };
  }
  return undefined;
}
