// Tasks the system creates (a spawned child, a trigger's task): one port, a local and a cluster
// implementation. A created task is an ordinary AgentTask that names its owner — locally a spec document
// under the state dir (the user's spec files are never written), on a cluster an AgentTask with an
// ownerReference — so both modes run, show and delete it like any task. Its name is chosen by the caller
// and deterministic, which makes create() idempotent: the same owner creating the same name again is a no-op.
import { API_VERSION, KIND } from '../api/agent-task.ts';
import { OWNER_LABELS } from '../api/spawn-fields.ts';
import type { OwnerKind } from '../api/spawn-fields.ts';
import { validNames } from './mailboxes.ts';

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

export type CreatedManifest = ReturnType<typeof createdManifest>;

/**
 * What both modes' stores do alike: the name check (a name becomes a file name and an API path, so "../x"
 * or "a/b" never leaves the namespace), "exists" for the same owner and "taken" for another, and deletion
 * of an owner's tasks only. A store says how a manifest is written, an owner read, a task listed and removed.
 */
export abstract class CreatedTaskStore implements CreatedTasks {
  /** Writes the manifest unless a task of its name exists ("exists"); a store's own refusal is "taken". */
  protected abstract write(owner: TaskOwner, manifest: CreatedManifest): Promise<CreateOutcome>;
  /** The owner the existing task of that name names, if it names one. */
  protected abstract ownerOfExisting(namespace: string, name: string): Promise<CreatedTask['owner'] | undefined>;
  /** Removes a task; false when it was gone. */
  protected abstract remove(namespace: string, name: string): Promise<boolean>;
  abstract list(owner: TaskOwner): Promise<CreatedTask[]>;

  /** Why this store may not give the name (locally: a task of the user's spec directory has it). */
  protected refuse(_owner: TaskOwner, _name: string): string | undefined {
    return undefined;
  }

  /** Called once after delete() or deleteByOwner() removed something. */
  protected removed(): void {}

  async create(
    owner: TaskOwner,
    name: string,
    spec: Record<string, unknown>,
    labels?: Record<string, string>,
  ): Promise<CreateOutcome> {
    if (!validNames(owner.namespace, name)) return taken(`${name}: not a lowercase RFC 1123 label`);
    const refused = this.refuse(owner, name);
    if (refused) return taken(`${name}: ${refused}`);
    const written = await this.write(owner, createdManifest(owner, name, spec, labels));
    if (written.result !== 'exists') return written;
    const by = await this.ownerOfExisting(owner.namespace, name);
    if (by?.kind === owner.kind && by.name === owner.name) return written;
    return taken(`${name}: a task of that name exists and is not this owner's`);
  }

  async delete(owner: TaskOwner, name: string): Promise<boolean> {
    const mine = validNames(owner.namespace, name) && (await this.list(owner)).some((t) => t.name === name);
    const gone = mine && (await this.remove(owner.namespace, name));
    if (gone) this.removed();
    return gone;
  }

  async deleteByOwner(owner: TaskOwner): Promise<string[]> {
    const mine = await this.list(owner);
    for (const t of mine) await this.remove(t.namespace, t.name);
    if (mine.length > 0) this.removed();
    return mine.map((t) => t.name);
  }
}

function taken(message: string): CreateOutcome {
  return { result: 'taken', message };
}
