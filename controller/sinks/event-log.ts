// The log line of an event, alike in both modes: locally it is the event; on a cluster it goes with a core/v1 Event.
import type { Logger } from 'pino';

export function logEvent(
  log: Logger,
  task: { namespace: string; name: string },
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
  details: Record<string, unknown>,
): void {
  log[type === 'Warning' ? 'warn' : 'info'](
    { namespace: task.namespace, task: task.name, event: reason, ...details },
    message,
  );
}
