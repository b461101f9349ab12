// Cluster mode's created tasks: AgentTasks with an ownerReference to their owner (so a cluster's garbage
// collector removes them with it) and the owner's label, by which they are listed and, when the owner is
// deleted, deleted by the controller too (a control plane without a garbage collector still loses them).
import { API_VERSION, GROUP, PLURAL, VERSION } from '../../api/agent-task.ts';
import { CreatedTaskStore, OWNER_LABELS, ownerOf } from '../../core/created-tasks.ts';
import type { CreatedManifest, CreatedTask, CreateOutcome, TaskOwner } from '../../core/created-tasks.ts';
import { taskPath } from '../../kube/names.ts';
import { isStatus } from '../../kube/kube-client.ts';
import type { KubeClient } from '../../kube/kube-client.ts';

interface TaskObject {
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
}

export class KubeCreatedTasks extends CreatedTaskStore {
  private readonly client: KubeClient;

  constructor(client: KubeClient) {
    super();
    this.client = client;
  }

  protected async write(owner: TaskOwner, manifest: CreatedManifest): Promise<CreateOutcome> {
    if (owner.uid) {
      const ref = { apiVersion: API_VERSION, kind: owner.kind, name: owner.name, uid: owner.uid, controller: true };
      manifest.metadata.ownerReferences = [ref];
    }
    try {
      await this.client.create(collectionPath(owner.namespace), manifest, 'work');
      return { result: 'created' };
    } catch (err) {
      const { name } = manifest.metadata;
      if (isStatus(err, 422)) return { result: 'taken', message: `${name}: ${(err as Error).message.slice(0, 200)}` };
      if (isStatus(err, 409)) return { result: 'exists' };
      throw err;
    }
  }

  protected async ownerOfExisting(namespace: string, name: string): Promise<CreatedTask['owner'] | undefined> {
    const existing = await this.client.get<TaskObject>(taskPath(namespace, name), undefined, 'work');
    return ownerOf(existing.metadata.labels);
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

  protected async remove(namespace: string, name: string): Promise<boolean> {
    try {
      await this.client.delete(taskPath(namespace, name), undefined, 'work');
      return true;
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
      return false;
    }
  }
}

function collectionPath(namespace: string): string {
  return `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`;
}
