// The AgentCredentials of each namespace, from an informer: the loop chooses a task's among them
// (reconciler/credentials-choice.ts) with no request per pass, and an AgentCredentials added, edited or deleted
// (a default set or lifted) has the tasks that may use it looked at again.
import { CREDENTIALS_KIND, CREDENTIALS_PLURAL } from '../../api/agent-credentials.ts';
import { GROUP, VERSION } from '../../api/agent-task.ts';
import type { Informer } from '../../kube/informer.ts';
import type { CustomObject } from '../../kube/objects.ts';
import type { NamespaceCredentials } from '../../reconciler/credentials-choice.ts';

type Listener = (namespace: string, name: string) => void;

/** The informer's collection path: one namespace's, or every namespace's. */
export function credentialsPath(namespace: string | undefined): string {
  return namespace
    ? `/apis/${GROUP}/${VERSION}/namespaces/${encodeURIComponent(namespace)}/${CREDENTIALS_PLURAL}`
    : `/apis/${GROUP}/${VERSION}/${CREDENTIALS_PLURAL}`;
}

export class ClusterNamespaceCredentials {
  private readonly informer: Informer<CustomObject>;
  private readonly listeners: Listener[] = [];

  constructor(informer: Informer<CustomObject>) {
    this.informer = informer;
    const changed = (obj: CustomObject) => {
      for (const fn of this.listeners) fn(obj.metadata.namespace ?? '', obj.metadata.name);
    };
    informer.on({ add: changed, update: (_old, obj) => changed(obj), delete: changed });
  }

  /** What the credentials choice reads: each AgentCredentials' name and spec.default as written. */
  inNamespace(namespace: string): NamespaceCredentials[] {
    const out: NamespaceCredentials[] = [];
    for (const obj of this.informer.list()) {
      if (obj.metadata.namespace !== namespace) continue;
      const isDefault = (obj.spec as { default?: unknown } | undefined)?.default === true;
      out.push({ name: obj.metadata.name, isDefault, where: `${CREDENTIALS_KIND} ${namespace}/${obj.metadata.name}` });
    }
    return out;
  }

  readonly changes = {
    subscribe: (fn: Listener) => void this.listeners.push(fn),
  };
}
