// A suspend hold on a cluster (api/hold.ts): two annotations set by a merge patch of metadata only, so nothing
// else of the object changes (spec never). `episodic suspend --kubeconfig` and the console share this.
import { API_VERSION } from '../../api/agent-task.ts';
import { holdAnnotations } from '../../api/hold.ts';
import type { SuspendHold } from '../../api/hold.ts';
import { taskPath } from '../../kube/names.ts';
import { isStatus } from '../../kube/kube-client.ts';
import type { KubeClient } from '../../kube/kube-client.ts';

export type HoldOutcome = { ok: true } | { ok: false; status: number; message: string };

export async function setClusterHold(
  client: KubeClient,
  namespace: string,
  name: string,
  hold: SuspendHold,
): Promise<HoldOutcome> {
  try {
    await client.mergePatch(taskPath(namespace, name), {
      apiVersion: API_VERSION,
      metadata: { annotations: holdAnnotations(hold) },
    });
    return { ok: true };
  } catch (err) {
    if (isStatus(err, 404)) return { ok: false, status: 404, message: `AgentTask ${namespace}/${name} not found` };
    return { ok: false, status: 502, message: (err as Error).message };
  }
}
