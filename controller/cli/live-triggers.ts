// The triggers under the live table: each one's source, when it next ticks or polls, how its last pass went,
// and with --hooks-addr the URL its deliveries go to. Pure: the run reads the status files, this lays them out.
import type { AgentTriggerSpec, AgentTriggerStatus } from '../api/agent-trigger.ts';
import { printable } from '../util/printable.ts';
import { formatElapsed } from './elapsed.ts';

export interface TriggerLine {
  trigger: { namespace: string; name: string; spec: AgentTriggerSpec };
  status?: AgentTriggerStatus;
}

export const TRIGGER_COLUMNS = ['TRIGGER', 'SOURCE', 'NEXT', 'LAST'];

/** "schedule 0 9 * * 1", "gitea o/r", "webhook": what the trigger follows, in a few words. */
export function sourceCell(spec: AgentTriggerSpec): string {
  const s = spec.source;
  if (s.schedule) return `schedule ${s.schedule.cron}${s.schedule.timeZone === 'UTC' ? '' : ` ${s.schedule.timeZone}`}`;
  if (s.gitea) return `gitea ${s.gitea.repo}`;
  if (s.github) return `github ${s.github.repo}`;
  return s.webhook?.repo ? `webhook ${s.webhook.repo}` : 'webhook';
}

/** Whether deliveries reach it: a webhook source, or a forge poll woken by its hook. */
function takesDeliveries(spec: AgentTriggerSpec): boolean {
  const s = spec.source;
  return s.webhook !== undefined || s.gitea?.webhook !== undefined || s.github?.webhook !== undefined;
}

/** "in 4m10s", "due", "on delivery", "only with --watch": when the next pass comes. */
export function nextCell(line: TriggerLine, watching: boolean, now: number): string {
  if (line.trigger.spec.suspend) return 'suspended';
  if (line.trigger.spec.source.webhook) return 'on delivery';
  if (!watching) return 'only with --watch';
  const next = line.status?.nextPollAt ? Date.parse(line.status.nextPollAt) : Number.NaN;
  if (Number.isNaN(next)) return 'due';
  return next <= now ? 'due' : `in ${formatElapsed(next - now)}`;
}

/** "3s ago: 2 items seen, 1 task created", or the last error: how the last pass went. */
export function lastCell(status: AgentTriggerStatus | undefined, now: number): string {
  if (!status?.lastPollAt) return 'not yet';
  const ago = `${formatElapsed(now - Date.parse(status.lastPollAt))} ago`;
  if (status.lastError) return `${ago}: error: ${status.lastError}`;
  const created = `${status.tasksCreated} task${status.tasksCreated === 1 ? '' : 's'} created`;
  return `${ago}: ${status.itemsSeen} item${status.itemsSeen === 1 ? '' : 's'} seen, ${created}`;
}

export function triggerRows(lines: TriggerLine[], watching: boolean, now: number): string[][] {
  return lines.map((l) => [
    l.trigger.namespace === 'default' ? l.trigger.name : `${l.trigger.namespace}/${l.trigger.name}`,
    sourceCell(l.trigger.spec),
    nextCell(l, watching, now),
    lastCell(l.status, now),
  ]);
}

/** "hooks: POST http://127.0.0.1:8080/hooks/default/issues": one line per trigger that takes deliveries. */
export function hookLines(lines: TriggerLine[], hooksUrl: string | undefined): string[] {
  if (!hooksUrl) return [];
  const served = lines.filter((l) => takesDeliveries(l.trigger.spec));
  const urls = served.map((l) => `${hooksUrl}/${encodeURIComponent(l.trigger.namespace)}/${l.trigger.name}`);
  return urls.length > 0
    ? urls.map((u) => `hooks: POST ${printable(u)}`)
    : [`hooks: POST ${hooksUrl}/NAMESPACE/TRIGGER`];
}
