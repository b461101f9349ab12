// The facts reconcileTrigger's table tests start from (trigger-reconcile, trigger-reconcile-items,
// trigger-timing): specs of each source, items, comments, polls and tasks, and readers of a decision.
import { emptyStatus } from '../../controller/api/agent-task-status.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task-status.ts';
import type { HeldItem } from '../../controller/api/agent-trigger.ts';
import { AgentTriggerSpecSchema, AgentTriggerStatusSchema } from '../../controller/api/agent-trigger.ts';
import type { ForgeComment, ForgeItem } from '../../controller/api/forge-item.ts';
import { ITEM_LABEL } from '../../controller/reconciler/trigger-items.ts';
import type {
  TriggerAction,
  TriggerDecision,
  TriggerFacts,
  TriggerTask,
} from '../../controller/reconciler/trigger-reconcile.ts';
import { TICK_LABEL } from '../../controller/reconciler/trigger-schedule.ts';

export const NOW = new Date('2026-11-25T12:00:30.000Z');
export const TEMPLATE = { spec: { prompt: 'Fix {{item.title}} {{tick}}', agent: { command: ['agent'] } } };
export const GIT_TEMPLATE = {
  spec: { ...TEMPLATE.spec, workspace: { git: { url: 'http://forge/o/r.git', ref: 'main' } } },
};

export const gitea = (over: Record<string, unknown> = {}, top: Record<string, unknown> = {}) =>
  AgentTriggerSpecSchema.parse({
    source: { gitea: { apiURL: 'http://forge', repo: 'o/r', labels: ['agent'], pollSeconds: 30, ...over } },
    template: TEMPLATE,
    ...top,
  });
export const schedule = (over: Record<string, unknown> = {}, top: Record<string, unknown> = {}) =>
  AgentTriggerSpecSchema.parse({ source: { schedule: { cron: '* * * * *', ...over } }, template: TEMPLATE, ...top });
export const webhook = (top: Record<string, unknown> = {}) =>
  AgentTriggerSpecSchema.parse({
    source: {
      webhook: {
        forge: 'gitea',
        repo: 'o/r',
        apiURL: 'http://forge',
        labels: ['agent'],
        secretEnv: 'S',
        tokenEnv: 'T',
      },
    },
    template: TEMPLATE,
    ...top,
  });

export const item = (number: number, over: Partial<ForgeItem> = {}): ForgeItem => ({
  number,
  title: `issue ${number}`,
  body: 'body',
  url: `http://forge/o/r/issues/${number}`,
  author: 'alice',
  authorIsBot: false,
  labels: ['agent'],
  open: true,
  isPullRequest: false,
  updatedAt: '2026-11-25T12:00:00Z',
  ...over,
});
export const comment = (id: number, itemNumber: number, body: string, author = 'bob'): ForgeComment => ({
  id,
  itemNumber,
  author,
  authorIsBot: false,
  body,
  createdAt: '2026-11-25T12:00:00Z',
  updatedAt: '2026-11-25T12:00:00Z',
});
export const listed = (...items: Array<ForgeItem | [ForgeItem, ForgeComment[]]>): TriggerFacts['poll'] => {
  const pairs = items.map((i) => (Array.isArray(i) ? i : ([i, []] as [ForgeItem, ForgeComment[]])));
  return {
    kind: 'listed',
    polled: pairs.map(([i]) => ({ item: i, fingerprint: `${i.number}:open` })),
    seen: pairs.map(([i, comments]) => ({ item: i, comments })),
  };
};
export const task = (
  name: string,
  number: number,
  finished = false,
  status?: Partial<AgentTaskStatus>,
): TriggerTask => ({
  namespace: 'default',
  name,
  labels: { [ITEM_LABEL]: String(number) },
  finished,
  ...(status ? { status: { ...emptyStatus(), ...status } } : {}),
});
export const tickTask = (minute: number, finished = true): TriggerTask => ({
  namespace: 'default',
  name: `t-${minute}`,
  labels: { [TICK_LABEL]: String(minute) },
  finished,
});
export const MINUTE = Math.floor(NOW.getTime() / 60_000);

export function facts(over: Partial<TriggerFacts> & { spec?: TriggerFacts['trigger']['spec'] } = {}): TriggerFacts {
  const { spec, ...rest } = over;
  return {
    trigger: { name: 't', spec: spec ?? gitea() },
    pass: 'timer',
    status: AgentTriggerStatusSchema.parse({}),
    now: NOW,
    jitter: 1,
    failures: 0,
    tasks: [],
    forge: { token: true },
    canResume: true,
    permissions: new Map(),
    pullRequests: new Map(),
    items: new Map(),
    ...rest,
  };
}

export const kinds = (d: TriggerDecision) => d.actions.filter((a) => a.kind !== 'log').map((a) => a.kind);
export const created = (d: TriggerDecision) =>
  d.actions.flatMap((a) => (a.kind === 'create' ? [a.name] : a.kind === 'delete' ? [`-${a.name}`] : []));
export const record = (d: TriggerDecision) =>
  (d.actions.find((a) => a.kind === 'record') as Extract<TriggerAction, { kind: 'record' }> | undefined)?.status;
export const after = (d: TriggerDecision) => (d.nextPassAt?.getTime() ?? NaN) - NOW.getTime();

export function heldItem(number: number): HeldItem {
  return {
    number,
    title: `issue ${number}`,
    body: 'b',
    url: `http://forge/o/r/issues/${number}`,
    author: 'alice',
    labels: ['agent'],
  };
}
