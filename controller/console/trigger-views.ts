// The Triggers page: each trigger's source in a line, its recorded status (polls, ticks, counts, held items,
// last error), its tasks (linked) and, when hooks are served, its hook URL. Built from the spec's source and
// the recorded status only — never token or secret names' values. Item text is bounded here; the page escapes it.
import { oneLine } from '../api/bounds.ts';
import { AgentTriggerStatusSchema, HELD_ITEMS_MAX } from '../api/agent-trigger.ts';
import type { TaskRow, TriggerView } from './views.ts';

export type { TriggerView } from './views.ts';

/** Tasks listed per trigger; the rest are counted. */
export const TRIGGER_TASKS_MAX = 50;

type Loose = Record<string, unknown> | undefined;
const str = (v: unknown) => (typeof v === 'string' ? v : '');

/** The source in a line: "github owner/repo issues [bug, agent]", "schedule 0 9 * * 1 (UTC)", "webhook gitea". */
export function describeSource(spec: unknown): string {
  const source = (spec as { source?: Record<string, Loose> } | undefined)?.source ?? {};
  if (source.schedule) return `schedule ${str(source.schedule.cron)} (${str(source.schedule.timeZone) || 'UTC'})`;
  const forge = source.github ? 'github' : source.gitea ? 'gitea' : source.webhook ? 'webhook' : '';
  const s = source.github ?? source.gitea ?? source.webhook;
  if (!s) return 'unknown source';
  const labels = Array.isArray(s.labels) && s.labels.length ? ` [${s.labels.map(str).join(', ')}]` : '';
  const command = typeof (s.command as Loose)?.text === 'string' ? ` command ${str((s.command as Loose)?.text)}` : '';
  const kind = forge === 'webhook' ? str(s.forge) : str(s.kind) || 'issues';
  return oneLine(`${forge} ${str(s.repo) || '(any repository)'} ${kind}${labels}${command}`);
}

function hooked(spec: unknown): boolean {
  const source = (spec as { source?: Record<string, Loose> } | undefined)?.source ?? {};
  return !!(source.webhook || source.github?.webhook || source.gitea?.webhook);
}

export function triggerView(
  t: { namespace: string; name: string; spec: unknown; status: unknown; problems?: string[] },
  rows: Iterable<TaskRow>,
  hooksBase?: string,
): TriggerView {
  const key = `${t.namespace}/${t.name}`;
  const parsed = AgentTriggerStatusSchema.safeParse(t.status ?? {});
  const s = parsed.success ? parsed.data : AgentTriggerStatusSchema.parse({});
  const mine = [...rows].filter((r) => r.trigger === key).sort((a, b) => (a.key < b.key ? 1 : -1));
  return {
    key,
    namespace: t.namespace,
    name: t.name,
    source: describeSource(t.spec).slice(0, 300),
    suspended: (t.spec as { suspend?: unknown } | undefined)?.suspend === true,
    ticks: !!(t.spec as { source?: Record<string, Loose> } | undefined)?.source?.schedule,
    lastPollAt: s.lastPollAt,
    nextPollAt: s.nextPollAt,
    lastTick: s.lastTick,
    itemsSeen: s.itemsSeen,
    tasksActive: s.tasksActive,
    tasksCreated: s.tasksCreated,
    rateLimitedUntil: s.rateLimitedUntil,
    lastError: s.lastError,
    held: (s.heldItems ?? []).slice(0, HELD_ITEMS_MAX).map((i) => ({ number: i.number, title: i.title, url: i.url })),
    heldOverflow: s.heldOverflow ?? 0,
    tasks: mine
      .slice(0, TRIGGER_TASKS_MAX)
      .map((r) => ({ key: r.key, namespace: r.namespace, name: r.name, phase: r.phase })),
    moreTasks: Math.max(0, mine.length - TRIGGER_TASKS_MAX),
    hookUrl: hooksBase && hooked(t.spec) ? `${hooksBase}/hooks/${t.namespace}/${t.name}` : undefined,
    problems: (t.problems ?? []).slice(0, 5),
  };
}
