// Local mode's pull requests for the merge queue (the rule is sources/triggers/trigger-pulls.ts): the loaded
// triggers, their status files under the state directory, and the token from the environment variable the
// trigger names (as its reports).
import type { QueuePulls, QueueTask } from '../../core/merge-queue-ports.ts';
import type { SpecTrigger } from '../../sources/local/spec-files.ts';
import { envSecret, LocalTriggerStatus } from '../../sources/triggers/local-triggers.ts';
import { triggerQueuePulls } from '../../sources/triggers/trigger-pulls.ts';

export function localQueuePulls<T extends QueueTask>(
  stateDir: string,
  triggers: () => ReadonlyMap<string, SpecTrigger> | undefined,
): QueuePulls<T> {
  const status = new LocalTriggerStatus(stateDir);
  return triggerQueuePulls({
    spec: (key) => triggers()?.get(key)?.spec,
    pullRequests: (key) => status.read(key)?.pullRequests,
    token: (source) => envSecret(source),
  });
}
