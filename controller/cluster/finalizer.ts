// The cleanup finalizer: while it is on an AgentTask, deleting the task only marks it, so the controller
// gets to stop and delete the task's pods (ownerReferences alone need a garbage collector, which a
// bare control plane does not run) before the object goes away. Metadata only: the spec is never written.
//
// Server-side apply, with our field manager owning just this one list item: no resourceVersion
// precondition to lose against the status writes racing it, and other finalizers are never touched.
import { API_VERSION, KIND } from '../api/agent-task.ts';
import { FIELD_MANAGER, isStatus } from './kube-client.ts';
import type { KubeClient } from './kube-client.ts';
import type { KubeObject } from './informer.ts';
import type { Lane } from './rate-limiter.ts';
import { taskPath } from './status-writer.ts';

export const FINALIZER = 'episodic.dev/cleanup';
const APPLY_PATCH = 'application/apply-patch+yaml';

export function hasFinalizer(obj: KubeObject): boolean {
  return (obj.metadata.finalizers ?? []).includes(FINALIZER);
}

async function applyFinalizers(client: KubeClient, obj: KubeObject, finalizers: string[], lane: Lane): Promise<KubeObject | undefined> {
  const { name, namespace, uid } = obj.metadata;
  // uid: never apply to a newer object that reuses the name.
  const body = { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace, uid, finalizers } };
  try {
    return await client.request('PATCH', taskPath(namespace as string, name), {
      body,
      lane,
      contentType: APPLY_PATCH,
      query: { fieldManager: FIELD_MANAGER, force: true },
    });
  } catch (err) {
    if (isStatus(err, 404) || isStatus(err, 409)) return undefined;
    throw err;
  }
}

export function addFinalizer(client: KubeClient, obj: KubeObject, lane: Lane = 'bookkeeping'): Promise<KubeObject | undefined> {
  return applyFinalizers(client, obj, [FINALIZER], lane);
}

/**
 * Applying without the item drops it when we alone own it. If someone else also claims it (it was
 * written by hand, say), fall back to rewriting the list under a resourceVersion precondition.
 */
export async function removeFinalizer(client: KubeClient, obj: KubeObject, lane: Lane = 'work'): Promise<KubeObject | undefined> {
  const applied = await applyFinalizers(client, obj, [], lane);
  if (!applied || !hasFinalizer(applied)) return applied;
  const finalizers = (applied.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
  const { namespace, name, resourceVersion } = applied.metadata;
  return client.mergePatch(taskPath(namespace as string, name), { metadata: { finalizers, resourceVersion } }, lane);
}
