// Cluster mode's created tasks: AgentTasks with an ownerReference to their owner (so a cluster's garbage
// collector removes them with it) and the owner's label, by which they are listed and, when the owner is
// deleted, deleted by the controller too (a control plane without a garbage collector still loses them).
import { API_VERSION, GROUP, PLURAL, VERSION } from '../../api/agent-task.ts';
import { createdManifest, OWNER_LABELS, ownerOf } from '../../core/created-tasks.ts';
import type { CreatedTask, CreatedTasks, CreateOutcome, TaskOwner } from '../../core/created-tasks.ts';
import { taskPath } from '../../cluster/names.ts';
import { isStatus } from '../../kube/kube-client.ts';
import type { KubeClient } from '../../kube/kube-client.ts';

interface TaskObject {
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
}

export class KubeCreatedTasks implements CreatedTasks {
  private readonly client: KubeClient;

  constructor(client: KubeClient) {
    this.client = client;
  }

  async create(
    owner: TaskOwner,
    name: string,
    spec: Record<string, unknown>,
    labels?: Record<string, string>,
  ): Promise<CreateOutcome> {
    const manifest = createdManifest(owner, name, spec, labels);
    if (owner.uid) {
      const ref = { apiVersion: API_VERSION, kind: owner.kind, name: owner.name, uid: owner.uid, controller: true };
      manifest.metadata.ownerReferences = [ref];
    }
    try {
      await this.client.create(collectionPath(owner.namespace), manifest, 'work');
      return { result: 'created' };
    } catch (err) {
      if (isStatus(err, 422)) return { result: 'taken', message: `${name}: ${(err as Error).message.slice(0, 200)}` };
      if (!isStatus(err, 409)) throw err;
    }
    const existing = await this.client.get<TaskObject>(taskPath(owner.namespace, name), undefined, 'work');
    const by = ownerOf(existing.metadata.labels);
    if (by?.kind === owner.kind && by.name === owner.name) return { result: 'exists' };
    return { result: 'taken', message: `${name}: an AgentTask of that name exists and is not this owner's` };
  }

  async list(owner: TaskOwner): Promise<CreatedTask[]> {
    const selector = `${OWNER_LABELS[owner.kind]}=${owner.name}`;
    const list = await this.client.get<{ items: TaskObject[] }>(
      collectionPath(owner.namespace),
      { labelSelector: selector },
      'work',
    );
    return list.items.flatMap((o) => {
      const by = ownerOf(o.metadata.labels);
      if (!by) return [];
      const { name, namespace, labels = {} } = o.metadata;
      return [{ name, namespace, owner: by, labels, spec: o.spec ?? {} }];
    });
  }

  async delete(owner: TaskOwner, name: string): Promise<boolean> {
    const mine = (await this.list(owner)).some((t) => t.name === name);
    if (!mine) return false;
    try {
      await this.client.delete(taskPath(owner.namespace, name), undefined, 'work');
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
      return false;
    }
    return true;
  }

  async deleteByOwner(owner: TaskOwner): Promise<string[]> {
    const mine = await this.list(owner);
    for (const t of mine) {
      try {
        await this.client.delete(taskPath(t.namespace, t.name), undefined, 'work');
      } catch (err) {
        if (!isStatus(err, 404)) throw err;
      }
    }
    return mine.map((t) => t.name);
  }
}

function collectionPath(namespace: string): string {
  return `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`;
}
