// Kubernetes objects as this controller reads them: client-node's model types (V1Pod, CoreV1Event, ...)
// with timestamps as the strings the API sends, since kube-client.ts parses JSON and never builds the
// Date objects client-node's own clients do. Type-only imports: nothing of client-node loads at run time.
import type {
  CoreV1Event,
  V1Container,
  V1EnvFromSource,
  V1EnvVar,
  V1PodSpec,
  V1Volume,
  V1ContainerStateTerminated,
  V1ContainerStatus,
  V1Lease,
  V1ObjectMeta,
  V1Pod,
  V1PodStatus,
  V1Status,
} from '@kubernetes/client-node';

/** A client-node model as JSON carries it: every Date a string. */
type Wire<T> = T extends Date
  ? string
  : T extends ReadonlyArray<infer U>
    ? Wire<U>[]
    : T extends object
      ? { [K in keyof T]: Wire<T[K]> }
      : T;

/** metadata of an object the API server returned: it always has a name. */
export type ObjectMeta = Wire<V1ObjectMeta> & { name: string };

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

/** A custom resource (AgentTask, AgentBudget): its spec and status are parsed with the zod schemas before use. */
export interface CustomObject extends KubeObject {
  spec?: unknown;
  status?: unknown;
}

export type Pod = Omit<Wire<V1Pod>, 'metadata'> & { metadata: ObjectMeta };
export type PodSpec = Wire<V1PodSpec>;
export type PodStatus = Wire<V1PodStatus>;
export type Container = Wire<V1Container>;
export type EnvVar = Wire<V1EnvVar>;
export type EnvFromSource = Wire<V1EnvFromSource>;
export type Volume = Wire<V1Volume>;
export type ContainerStatus = Wire<V1ContainerStatus>;
export type TerminatedState = Wire<V1ContainerStateTerminated>;
export type KubeEvent = Omit<Wire<CoreV1Event>, 'metadata'> & { metadata: ObjectMeta };
export type Lease = Omit<Wire<V1Lease>, 'metadata'> & { metadata: ObjectMeta };
export type Status = Wire<V1Status>;

/** A list answer. Not V1ListMeta: client-node renames its `continue` to `_continue`. */
export interface KubeList<T> {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: T[];
}

/** One line of a watch stream: an object, a BOOKMARK (its metadata names a resourceVersion), or an ERROR. */
export type WatchEvent<T> =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: T }
  | { type: 'BOOKMARK'; object: { metadata?: { resourceVersion?: string } } }
  | { type: 'ERROR'; object?: Status };
