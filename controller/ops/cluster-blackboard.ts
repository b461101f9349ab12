// The blackboard on a cluster: ConfigMap episodic-blackboard in the task's namespace; its data holds the
// entries, an annotation the newest applied episode per task. Each change is read-modify-replace with the
// resourceVersion it read, so concurrent writers retry instead of losing each other's keys (last writer
// wins per key), and entries and marker change in one write (exactly once across a kill -9).
import type { KubeClient } from '../kube/kube-client.ts';
import { isStatus } from '../kube/kube-client.ts';
import type { Blackboard } from './blackboard.ts';

export const BLACKBOARD_CONFIGMAP = 'episodic-blackboard';
export const APPLIED_ANNOTATION = 'episodic.dev/applied-ops';
const CONFLICT_RETRIES = 5;

interface ConfigMap {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  metadata: { name: string; namespace: string; resourceVersion?: string; annotations?: Record<string, string> };
  data?: Record<string, string>;
}

function path(namespace: string, name = ''): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps${name ? `/${name}` : ''}`;
}

async function readConfigMap(client: KubeClient, namespace: string): Promise<ConfigMap | undefined> {
  try {
    return await client.get<ConfigMap>(path(namespace, BLACKBOARD_CONFIGMAP), undefined, 'work');
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
}

function boardOf(cm: ConfigMap | undefined): Blackboard {
  let applied: Record<string, number> = {};
  try {
    applied = JSON.parse(cm?.metadata.annotations?.[APPLIED_ANNOTATION] ?? '{}') as Record<string, number>;
  } catch {}
  return { entries: { ...cm?.data }, applied };
}

export async function readClusterBlackboard(client: KubeClient, namespace: string): Promise<Blackboard> {
  return boardOf(await readConfigMap(client, namespace));
}

/** Read, change, replace (or create); a conflict reads again. Undefined when `change` changes nothing. */
export async function updateClusterBlackboard<R>(
  client: KubeClient,
  namespace: string,
  change: (board: Blackboard) => { board: Blackboard; value: R } | undefined,
): Promise<R | undefined> {
  for (let attempt = 0; ; attempt++) {
    const cm = await readConfigMap(client, namespace);
    const changed = change(boardOf(cm));
    if (!changed) return undefined;
    const body: ConfigMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: BLACKBOARD_CONFIGMAP,
        namespace,
        ...(cm?.metadata.resourceVersion ? { resourceVersion: cm.metadata.resourceVersion } : {}),
        annotations: { ...cm?.metadata.annotations, [APPLIED_ANNOTATION]: JSON.stringify(changed.board.applied) },
      },
      data: changed.board.entries,
    };
    try {
      if (cm) await client.request('PUT', path(namespace, BLACKBOARD_CONFIGMAP), { body, lane: 'work' });
      else await client.create(path(namespace), body, 'work');
      return changed.value;
    } catch (err) {
      if (!(isStatus(err, 409) && attempt < CONFLICT_RETRIES)) throw err;
    }
  }
}
