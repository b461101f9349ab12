// A cluster's pull requests for the merge queue (the rule is sources/triggers/trigger-pulls.ts): the
// AgentTriggers from the controller's informer (spec and status.pullRequests), the token from the Secret key
// the trigger names, read when a merge needs it, as the trigger runner reads it (never cached or logged).
import { AgentTriggerStatusSchema, validateTriggerSpec } from '../../api/agent-trigger.ts';
import type { AgentTriggerSpec } from '../../api/agent-trigger.ts';
import type { QueuePulls, QueueTask } from '../../core/merge-queue-ports.ts';
import type { Informer } from '../../kube/informer.ts';
import type { KubeClient } from '../../kube/kube-client.ts';
import type { CustomObject } from '../../kube/objects.ts';
import { triggerQueuePulls } from '../triggers/trigger-pulls.ts';
import { triggerSecret } from './agent-triggers.ts';

export function clusterQueuePulls<T extends QueueTask>(
  triggers: Informer<CustomObject>,
  client: KubeClient,
): QueuePulls<T> {
  // The queue asks at every scan: a spec is validated once per object the informer holds.
  const specs = new WeakMap<CustomObject, AgentTriggerSpec | undefined>();
  const spec = (key: string): AgentTriggerSpec | undefined => {
    const obj = triggers.get(key);
    if (!obj) return undefined;
    if (!specs.has(obj)) {
      const valid = validateTriggerSpec(obj.spec);
      specs.set(obj, valid.ok ? valid.spec : undefined);
    }
    return specs.get(obj);
  };
  return triggerQueuePulls({
    spec,
    pullRequests: (key) => {
      const parsed = AgentTriggerStatusSchema.safeParse(triggers.get(key)?.status ?? {});
      return parsed.success ? parsed.data.pullRequests : undefined;
    },
    token: (source, namespace) => triggerSecret(client, source.tokenSecretRef, namespace),
  });
}
