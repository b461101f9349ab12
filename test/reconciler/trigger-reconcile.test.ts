// Table tests of reconcileTrigger: for schedules, forge polls, webhook passes and deliveries, which items
// become tasks, which are held, when the cursor moves, the lookups it asks for before deciding, the report
// and resume actions, the backoff after a failure and when the next pass is due — with the clock and the
// jitter as inputs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emptyStatus } from '../../controller/api/agent-task-status.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task-status.ts';
import type { AgentTriggerStatus, HeldItem } from '../../controller/api/agent-trigger.ts';
import { AgentTriggerSpecSchema, AgentTriggerStatusSchema } from '../../controller/api/agent-trigger.ts';
import type { ForgeComment, ForgeItem } from '../../controller/api/forge-item.ts';
import { REPORT_MARKER_PREFIX } from '../../controller/api/forge-item.ts';
import { ITEM_LABEL } from '../../controller/reconciler/trigger-items.ts';
import type {
  TriggerAction,
  TriggerDecision,
  TriggerFacts,
  TriggerTask,
} from '../../controller/reconciler/trigger-reconcile.ts';
import { reconcileTrigger, recordOutcome } from '../../controller/reconciler/trigger-reconcile.ts';
import { TICK_LABEL } from '../../controller/reconciler/trigger-schedule.ts';
import {
  FOLLOW_UP_MS,
  MAX_BACKOFF_MS,
  nextTimerDelay,
  SCHEDULE_IDLE_MS,
  wakeOnPhase,
} from '../../controller/reconciler/trigger-timing.ts';

const NOW = new Date('2026-11-25T12:00:30.000Z');
const TEMPLATE = { spec: { prompt: 'Fix {{item.title}} {{tick}}', agent: { command: ['agent'] } } };
const GIT_TEMPLATE = {
  spec: { ...TEMPLATE.spec, workspace: { git: { url: 'http://forge/o/r.git', ref: 'main' } } },
};

const gitea = (over: Record<string, unknown> = {}, top: Record<string, unknown> = {}) =>
  AgentTriggerSpecSchema.parse({
    source: { gitea: { apiURL: 'http://forge', repo: 'o/r', labels: ['agent'], pollSeconds: 30, ...over } },
    template: TEMPLATE,
    ...top,
  });
const schedule = (over: Record<string, unknown> = {}, top: Record<string, unknown> = {}) =>
  AgentTriggerSpecSchema.parse({ source: { schedule: { cron: '* * * * *', ...over } }, template: TEMPLATE, ...top });
const webhook = (top: Record<string, unknown> = {}) =>
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

const item = (number: number, over: Partial<ForgeItem> = {}): ForgeItem => ({
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
const comment = (id: number, itemNumber: number, body: string, author = 'bob'): ForgeComment => ({
  id,
  itemNumber,
  author,
  authorIsBot: false,
  body,
  createdAt: '2026-11-25T12:00:00Z',
  updatedAt: '2026-11-25T12:00:00Z',
});
const listed = (...items: Array<ForgeItem | [ForgeItem, ForgeComment[]]>): TriggerFacts['poll'] => {
  const pairs = items.map((i) => (Array.isArray(i) ? i : ([i, []] as [ForgeItem, ForgeComment[]])));
  return {
    kind: 'listed',
    polled: pairs.map(([i]) => ({ item: i, fingerprint: `${i.number}:open` })),
    seen: pairs.map(([i, comments]) => ({ item: i, comments })),
  };
};
const task = (name: string, number: number, finished = false, status?: Partial<AgentTaskStatus>): TriggerTask => ({
  namespace: 'default',
  name,
  labels: { [ITEM_LABEL]: String(number) },
  finished,
  ...(status ? { status: { ...emptyStatus(), ...status } } : {}),
});
const tickTask = (minute: number, finished = true): TriggerTask => ({
  namespace: 'default',
  name: `t-${minute}`,
  labels: { [TICK_LABEL]: String(minute) },
  finished,
});
const MINUTE = Math.floor(NOW.getTime() / 60_000);

function facts(over: Partial<TriggerFacts> & { spec?: TriggerFacts['trigger']['spec'] } = {}): TriggerFacts {
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

const kinds = (d: TriggerDecision) => d.actions.filter((a) => a.kind !== 'log').map((a) => a.kind);
const created = (d: TriggerDecision) =>
  d.actions.flatMap((a) => (a.kind === 'create' ? [a.name] : a.kind === 'delete' ? [`-${a.name}`] : []));
const record = (d: TriggerDecision) =>
  (d.actions.find((a) => a.kind === 'record') as Extract<TriggerAction, { kind: 'record' }> | undefined)?.status;
const after = (d: TriggerDecision) => (d.nextPassAt?.getTime() ?? NaN) - NOW.getTime();

const cases: Array<{ name: string; in: TriggerFacts; check: (d: TriggerDecision) => void }> = [
  {
    name: 'suspended: nothing polled or created, errors cleared, looked at again in a minute',
    in: facts({ spec: gitea({}, { suspend: true }), status: AgentTriggerStatusSchema.parse({ lastError: 'old' }) }),
    check: (d) => {
      assert.deepEqual(kinds(d), ['record']);
      assert.equal(record(d)?.lastError, undefined);
      assert.equal(after(d), 60_000);
    },
  },
  {
    name: 'schedule, first sight: no backfill — ticks count from now, the next one is waited for',
    in: facts({ spec: schedule() }),
    check: (d) => {
      assert.deepEqual(created(d), []);
      assert.equal(record(d)?.lastTick, NOW.toISOString());
      assert.equal(d.nextPassAt?.toISOString(), '2026-11-25T12:01:00.000Z');
    },
  },
  {
    name: 'schedule, a tick due: its task, labelled with the tick, and the tick on record after it',
    in: facts({ spec: schedule(), status: AgentTriggerStatusSchema.parse({ lastTick: '2026-11-25T11:59:30Z' }) }),
    check: (d) => {
      assert.deepEqual(kinds(d), ['create', 'record']);
      const create = d.actions.find((a) => a.kind === 'create') as Extract<TriggerAction, { kind: 'create' }>;
      assert.equal(create.name, 't-20261125-1200');
      assert.equal(create.labels[TICK_LABEL], String(MINUTE));
      assert.equal(create.spec.prompt, 'Fix {{item.title}} 2026-11-25T12:00:00.000Z');
      assert.equal(record(d)?.lastTick, '2026-11-25T12:00:00.000Z');
      assert.equal(record(d)?.tasksActive, 1);
    },
  },
  {
    name: 'schedule, Replace: the running task is deleted before the new one is created',
    in: facts({
      spec: schedule({ concurrencyPolicy: 'Replace' }),
      status: AgentTriggerStatusSchema.parse({ lastTick: '2026-11-25T11:59:30Z' }),
      tasks: [tickTask(MINUTE - 1, false)],
    }),
    check: (d) => {
      assert.deepEqual(created(d), [`-t-${MINUTE - 1}`, 't-20261125-1200']);
      assert.equal(record(d)?.tasksActive, 1);
    },
  },
  {
    name: 'schedule, historyLimit: the oldest finished tasks are deleted after the record',
    in: facts({
      spec: schedule({ historyLimit: 1 }),
      status: AgentTriggerStatusSchema.parse({ lastTick: NOW.toISOString() }),
      tasks: [tickTask(MINUTE - 3), tickTask(MINUTE - 2), tickTask(MINUTE - 1)],
    }),
    check: (d) => {
      assert.deepEqual(kinds(d), ['record', 'delete', 'delete']);
      assert.deepEqual(created(d), [`-t-${MINUTE - 2}`, `-t-${MINUTE - 3}`]);
    },
  },
  {
    name: 'schedule, a cron with no tick ahead: looked at again in an hour',
    in: facts({
      spec: schedule({ cron: '0 0 30 2 *' }),
      status: AgentTriggerStatusSchema.parse({ lastTick: NOW.toISOString() }),
    }),
    check: (d) => assert.equal(after(d), SCHEDULE_IDLE_MS),
  },
  {
    name: 'forge: a matching item becomes its task; the cursor moves to it; next poll after pollSeconds',
    in: facts({ poll: listed(item(7)) }),
    check: (d) => {
      assert.deepEqual(created(d), ['t-7']);
      assert.equal(record(d)?.cursor, '2026-11-25T12:00:00Z');
      assert.deepEqual(record(d)?.cursorItems, ['7:open']);
      assert.equal(record(d)?.itemsSeen, 1);
      assert.equal(record(d)?.tasksActive, 1);
      assert.equal(after(d), 30_000);
    },
  },
  {
    name: 'forge: slots full — the item is held, the cursor stays, the poll keeps it for a 304',
    in: facts({ poll: listed(item(8)), tasks: [task('t-7', 7)] }),
    check: (d) => {
      assert.deepEqual(created(d), []);
      assert.equal(record(d)?.cursor, undefined);
      const rec = d.actions.find((a) => a.kind === 'record') as Extract<TriggerAction, { kind: 'record' }>;
      assert.deepEqual(
        rec.poll?.held.map((s) => s.item.number),
        [8],
      );
    },
  },
  {
    name: 'forge: a 304 plans what the last poll held; the slot is free now',
    in: facts({
      poll: { kind: 'unchanged' },
      heldSeen: [{ item: item(8), comments: [] }],
      tasks: [task('t-7', 7, true)],
    }),
    check: (d) => {
      assert.deepEqual(created(d), ['t-8']);
      assert.equal(record(d)?.itemsSeen, 0);
    },
  },
  {
    name: "forge: the token's own user's labelled issue makes a task (a personal token is the common set-up)",
    in: facts({ poll: listed(item(9, { author: 'alice' })), status: AgentTriggerStatusSchema.parse({}) }),
    check: (d) => assert.deepEqual(created(d), ['t-9']),
  },
  {
    name: "forge: episodic's own report comment is no command: no permission asked, the item skipped for it",
    in: facts({
      spec: gitea({ labels: [], command: {} }),
      poll: listed([item(3), [comment(50, 3, `${REPORT_MARKER_PREFIX}t/t-3 -->\n/episodic`, 'alice')]]),
    }),
    check: (d) => {
      assert.deepEqual(d.lookups, []);
      assert.deepEqual(created(d), []);
      assert.deepEqual(record(d)?.itemsSkipped, { noCommand: 1 });
    },
  },
  {
    name: 'forge: items that get no task are counted by reason, added to the counts so far',
    in: facts({
      spec: gitea({ excludeAuthors: ['mallory'] }, { maxConcurrency: 5 }),
      status: AgentTriggerStatusSchema.parse({ itemsSkipped: { closed: 2 } }),
      poll: listed(
        item(1, { open: false }),
        item(2, { labels: [] }),
        item(3, { authorIsBot: true }),
        item(4, { author: 'mallory' }),
        item(5),
        item(6),
      ),
      tasks: [task('t-5', 5, true)],
    }),
    check: (d) => {
      assert.deepEqual(created(d), ['t-6']);
      assert.deepEqual(record(d)?.itemsSkipped, {
        closed: 3,
        labelsMissing: 1,
        bot: 1,
        excludedAuthor: 1,
        taskExists: 1,
      });
    },
  },
  {
    name: 'forge: a 304 replays the held items without counting their skips again',
    in: facts({
      poll: { kind: 'unchanged' },
      heldSeen: [{ item: item(8), comments: [] }],
      tasks: [task('t-8', 8, true)],
      status: AgentTriggerStatusSchema.parse({ itemsSkipped: { closed: 1 } }),
    }),
    check: (d) => {
      assert.deepEqual(created(d), []);
      assert.equal(record(d) && 'itemsSkipped' in record(d)!, false);
    },
  },
  {
    name: 'forge: a commenter the token cannot read holds that item only — in itemsUndecided, the cursor stays',
    in: facts({
      spec: gitea({ command: {} }, { maxConcurrency: 5 }),
      poll: listed([item(3, { labels: [] }), [comment(50, 3, '/episodic', 'carol')]], item(4)),
      permissions: new Map([['carol', { unknown: "cannot read carol's permission: 403" }]]),
    }),
    check: (d) => {
      assert.deepEqual(created(d), ['t-4'], 'the other item goes on');
      assert.deepEqual(record(d)?.itemsUndecided, [{ number: 3, reason: "cannot read carol's permission: 403" }]);
      assert.equal(record(d)?.cursor, undefined, 'polled again');
      const rec = d.actions.find((a) => a.kind === 'record') as Extract<TriggerAction, { kind: 'record' }>;
      assert.deepEqual(
        rec.poll?.held.map((s) => s.item.number),
        [3, 4],
        'a 304 brings them back',
      );
      assert.ok(d.actions.some((a) => a.kind === 'log' && a.level === 'warn' && a.message === 'items wait'));
    },
  },
  {
    name: 'forge: once every item is decided, itemsUndecided is cleared and the cursor moves',
    in: facts({
      spec: gitea({ command: {} }),
      status: AgentTriggerStatusSchema.parse({ itemsUndecided: [{ number: 3, reason: 'x' }] }),
      poll: listed([item(3, { labels: [] }), [comment(50, 3, '/episodic', 'carol')]]),
      permissions: new Map([['carol', 'write' as const]]),
    }),
    check: (d) => {
      assert.deepEqual(created(d), ['t-3']);
      const rec = record(d);
      assert.ok(rec && 'itemsUndecided' in rec && rec.itemsUndecided === undefined);
      assert.equal(rec?.cursor, '2026-11-25T12:00:00Z');
    },
  },
  {
    name: 'forge: a resume whose commenter cannot be read waits: nothing resumed, the item undecided',
    in: facts({
      spec: gitea({ labels: [], command: {} }),
      poll: listed([item(3), [comment(51, 3, '/episodic resume', 'carol')]]),
      tasks: [task('t-3', 3, true, { phase: 'NeedsReview' })],
      permissions: new Map([['carol', { unknown: 'cannot read' }]]),
    }),
    check: (d) => {
      assert.equal(
        d.actions.some((a) => a.kind === 'resume'),
        false,
      );
      assert.deepEqual(record(d)?.itemsUndecided, [{ number: 3, reason: 'cannot read' }]);
      assert.equal(record(d)?.cursor, undefined);
    },
  },
  {
    name: 'forge: a command comment — its author’s permission is asked for before anything is done',
    in: facts({ spec: gitea({ labels: [], command: {} }), poll: listed([item(3), [comment(50, 3, '/episodic')]]) }),
    check: (d) => {
      assert.deepEqual(d.lookups, [{ kind: 'permission', user: 'bob' }]);
      assert.deepEqual(d.actions, []);
      assert.equal(d.status, undefined);
    },
  },
  {
    name: 'forge: the command from a writer becomes a task',
    in: facts({
      spec: gitea({ labels: [], command: {} }),
      poll: listed([item(3), [comment(50, 3, '/episodic')]]),
      permissions: new Map([['bob', 'write']]),
    }),
    check: (d) => assert.deepEqual(created(d), ['t-3']),
  },
  {
    name: 'forge: /episodic resume from a writer resumes the item’s newest NeedsReview task, and plans nothing',
    in: facts({
      spec: gitea({ labels: [], command: {} }),
      poll: listed([item(3), [comment(51, 3, '/episodic resume 2')]]),
      tasks: [task('t-3', 3, false, { phase: 'Failed' }), task('t-3-2', 3, false, { phase: 'NeedsReview' })],
      permissions: new Map([['bob', 'write']]),
    }),
    check: (d) => {
      const resume = d.actions.find((a) => a.kind === 'resume');
      assert.deepEqual(resume, {
        kind: 'resume',
        namespace: 'default',
        name: 't-3-2',
        request: { token: 'gitea-comment-51', by: 'gitea:bob', episodes: 2 },
      });
      assert.deepEqual(created(d), []);
    },
  },
  {
    name: 'forge: a PR item without its head — the PR is read first (report.pullRequest, git workspace)',
    in: facts({
      spec: gitea({ kind: 'pullRequests', tokenEnv: 'T' }, { report: { pullRequest: {} }, template: GIT_TEMPLATE }),
      poll: listed(item(5, { isPullRequest: true })),
    }),
    check: (d) => assert.deepEqual(d.lookups, [{ kind: 'pullRequest', number: 5 }]),
  },
  {
    name: "forge: a fork's PR is refused and said on the item; no task",
    in: facts({
      spec: gitea(
        { kind: 'pullRequests', tokenEnv: 'T' },
        { report: { comment: true, pullRequest: {} }, template: GIT_TEMPLATE },
      ),
      poll: listed(item(5, { isPullRequest: true })),
      pullRequests: new Map([[5, { headBranch: 'feature', headRepo: 'mallory/r' }]]),
    }),
    check: (d) => {
      assert.deepEqual(created(d), []);
      const refuse = d.actions.find((a) => a.kind === 'refuse') as Extract<TriggerAction, { kind: 'refuse' }>;
      assert.equal(refuse.key, 't/t-5');
      assert.match(refuse.body, /not started[\s\S]*mallory\/r/);
      assert.deepEqual(kinds(d)[0], 'refuse');
    },
  },
  {
    name: 'forge: spec.report follows the items as the second stage; without a token it fails the pass there',
    in: facts({ spec: gitea({}, { report: { comment: true } }), poll: listed(item(7)), forge: { token: false } }),
    check: (d) => {
      assert.deepEqual(kinds(d), ['create', 'record']);
      assert.equal(d.reportsNext, true);
      const stage = reconcileTrigger({
        ...facts({ spec: gitea({}, { report: { comment: true } }) }),
        stage: 'reports',
        forge: { token: false },
      });
      assert.deepEqual(kinds(stage), ['record', 'fail']);
    },
  },
  {
    name: 'reports stage: each task behind gets its comment and label; gone ones are pruned; the items untouched',
    in: facts({
      stage: 'reports',
      spec: gitea({}, { report: { comment: true, labels: { running: 'wip' } } }),
      poll: listed(item(8)),
      tasks: [task('t-7', 7, false, { phase: 'Running' })],
      status: AgentTriggerStatusSchema.parse({ reported: { 'gone-1': { label: 'wip' } } }),
    }),
    check: (d) => {
      const reports = d.actions.flatMap((a) => (a.kind === 'report' ? [a.report] : []));
      assert.deepEqual(
        reports.map((r) => [r.task, r.key, r.actions.map((x) => x.kind)]),
        [['t-7', 't/t-7', ['comment', 'labels']]],
      );
      assert.deepEqual(record(d)?.reported, {});
      assert.deepEqual(kinds(d), ['record', 'report']);
    },
  },
  {
    name: "reports stage: a re-run reports once, its newest run, on the item's one comment (the first task's key)",
    in: facts({
      stage: 'reports',
      spec: gitea({}, { report: { comment: true } }),
      tasks: [task('t-3', 3, true, { phase: 'Succeeded' }), task('t-3-2', 3, false, { phase: 'Running' })],
    }),
    check: (d) => {
      const reports = d.actions.flatMap((a) => (a.kind === 'report' ? [a.report] : []));
      assert.deepEqual(
        reports.map((r) => [r.task, r.key]),
        [['t-3-2', 't/t-3']],
      );
    },
  },
  {
    name: 'forge: a Succeeded task with changes — the item is read for the PR title before publishing',
    in: facts({
      stage: 'reports',
      spec: gitea({}, { report: { pullRequest: {} }, template: GIT_TEMPLATE }),
      tasks: [task('t-7', 7, true, { phase: 'Succeeded', workspaceChanges: 2 })],
    }),
    check: (d) => assert.deepEqual(d.lookups, [{ kind: 'item', number: 7, pullRequest: false }]),
  },
  {
    name: 'webhook pass: a held item takes the freed slot; next pass in a minute',
    in: facts({
      spec: webhook(),
      forge: undefined,
      status: AgentTriggerStatusSchema.parse({ heldItems: [heldItem(4)], heldOverflow: 2 }),
      tasks: [task('t-3', 3, true)],
    }),
    check: (d) => {
      assert.deepEqual(created(d), ['t-4']);
      assert.equal(record(d)?.heldItems, undefined);
      assert.equal(record(d)?.heldOverflow, undefined);
      assert.equal(record(d)?.lastError, undefined);
      assert.equal(after(d), 60_000);
    },
  },
  {
    name: 'delivery at maxConcurrency: held in status, no report, no next pass of its own',
    in: facts({
      spec: webhook(),
      pass: 'delivery',
      delivered: [{ item: item(4), comments: [] }],
      tasks: [task('t-3', 3)],
    }),
    check: (d) => {
      assert.deepEqual(created(d), []);
      assert.deepEqual(
        record(d)?.heldItems?.map((h) => h.number),
        [4],
      );
      assert.equal(record(d)?.itemsSeen, 1);
      assert.equal(d.nextPassAt, undefined);
    },
  },
  {
    name: 'delivery with spec.report: the report forge is opened before creating (the item’s branch)',
    in: facts({
      spec: webhook({ report: { comment: true } }),
      pass: 'delivery',
      forge: undefined,
      delivered: [{ item: item(4), comments: [] }],
    }),
    check: (d) => assert.deepEqual(d.lookups, [{ kind: 'forge' }]),
  },
  {
    name: 'delivery to a suspended trigger: ignored, the status left alone',
    in: facts({ spec: webhook({ suspend: true }), pass: 'delivery', delivered: [{ item: item(4), comments: [] }] }),
    check: (d) => {
      assert.equal(d.status, undefined);
      assert.deepEqual(kinds(d), []);
    },
  },
  {
    name: 'delivery: an item that gets no task is counted by reason',
    in: facts({
      spec: webhook(),
      pass: 'delivery',
      delivered: [{ item: item(4, { open: false }), comments: [] }],
      status: AgentTriggerStatusSchema.parse({ itemsSkipped: { closed: 1 } }),
    }),
    check: (d) => assert.deepEqual(record(d)?.itemsSkipped, { closed: 2 }),
  },
  {
    name: 'report pass of a schedule: the task that just finished counts for historyLimit; the status is left',
    in: facts({
      spec: schedule({ historyLimit: 1 }),
      pass: 'report',
      tasks: [tickTask(MINUTE - 2), tickTask(MINUTE - 1)],
    }),
    check: (d) => {
      assert.equal(d.status, undefined);
      assert.deepEqual(created(d), [`-t-${MINUTE - 2}`]);
    },
  },
  {
    name: 'report pass without spec.report: nothing to do',
    in: facts({ pass: 'report' }),
    check: (d) => {
      assert.equal(d.status, undefined);
      assert.deepEqual(d.actions, []);
    },
  },
];

function heldItem(number: number): HeldItem {
  return {
    number,
    title: `issue ${number}`,
    body: 'b',
    url: `http://forge/o/r/issues/${number}`,
    author: 'alice',
    labels: ['agent'],
  };
}

for (const c of cases) test(c.name, () => c.check(reconcileTrigger(c.in)));

const forgeDown = { kind: 'forge', message: 'GET /user -> 503' } as const;
const failures: Array<{ name: string; in: Partial<TriggerFacts>; afterMs: number; rateLimited?: string }> = [
  { name: 'first forge failure: pollSeconds', in: { failure: forgeDown }, afterMs: 30_000 },
  { name: 'second: doubled', in: { failure: forgeDown, failures: 1 }, afterMs: 60_000 },
  { name: 'equal jitter: at least half', in: { failure: forgeDown, failures: 1, jitter: 0 }, afterMs: 30_000 },
  { name: 'capped', in: { failure: forgeDown, failures: 20 }, afterMs: MAX_BACKOFF_MS },
  {
    name: 'not the forge (the apiserver, a file): 5 s',
    in: { failure: { kind: 'other', message: 'EIO' } },
    afterMs: 5_000,
  },
  {
    name: 'a rate limit waits for its reset and says so',
    in: { failure: { kind: 'rateLimited', resetAt: new Date(NOW.getTime() + 600_000), message: 'rate limit' } },
    afterMs: 600_000,
    rateLimited: new Date(NOW.getTime() + 600_000).toISOString(),
  },
  {
    name: 'a reset already past still waits a second',
    in: { failure: { kind: 'rateLimited', resetAt: new Date(NOW.getTime() - 5_000), message: 'rate limit' } },
    afterMs: 1_000,
    rateLimited: new Date(NOW.getTime() - 5_000).toISOString(),
  },
];
for (const c of failures)
  test(`failure: ${c.name}`, () => {
    const d = reconcileTrigger(facts({ status: AgentTriggerStatusSchema.parse({ cursor: 'c' }), ...c.in }));
    assert.equal(after(d), c.afterMs);
    assert.equal(d.failures, (c.in.failures ?? 0) + 1);
    assert.equal(d.status?.cursor, 'c', 'the cursor stays');
    assert.equal(d.status?.lastError, c.in.failure?.message);
    assert.equal(d.status?.rateLimitedUntil, c.rateLimited);
    assert.equal(d.status?.nextPollAt, d.nextPassAt?.toISOString());
  });

test('failure: a long error is cut to the status bound', () => {
  const d = reconcileTrigger(facts({ failure: { kind: 'other', message: 'x'.repeat(2000) } }));
  assert.equal(d.status?.lastError?.length, 500);
});

test('a success after failures resets the count', () => {
  assert.equal(reconcileTrigger(facts({ failures: 3, poll: listed() })).failures, 0);
});

test('recordOutcome: a created task counts, an existing one not; a report remembers its state and PR', () => {
  const base: AgentTriggerStatus = AgentTriggerStatusSchema.parse({ tasksCreated: 2 });
  const create: TriggerAction = { kind: 'create', name: 'x', spec: {}, labels: {} };
  assert.equal(recordOutcome(base, create, { kind: 'created' }).tasksCreated, 3);
  assert.equal(recordOutcome(base, create, { kind: 'exists' }).tasksCreated, 2);
  const report: TriggerAction = {
    kind: 'report',
    report: {
      task: 't-7',
      number: 7,
      key: 't/t-7',
      item: { number: 7, title: '', isPullRequest: false },
      actions: [],
      next: { label: 'done' },
    },
  };
  const pr = { number: 12, url: 'http://forge/o/r/pulls/12' };
  const out = recordOutcome(base, report, { kind: 'reported', pullRequest: pr });
  assert.deepEqual(out.reported, { 't-7': { label: 'done' } });
  assert.deepEqual(out.pullRequests, { 't-7': pr });
});

test('timer delays: a pass never follows sooner than a second; a delivery-woken pass gets one follow-up', () => {
  const at = (ms: number) => new Date(NOW.getTime() + ms);
  const none = { wokenWhileRunning: false, followUp: false };
  assert.deepEqual(nextTimerDelay(at(-5_000), NOW, none), { delayMs: 1_000, followUp: false });
  assert.deepEqual(nextTimerDelay(at(30_000), NOW, none), { delayMs: 30_000, followUp: false });
  assert.deepEqual(nextTimerDelay(at(30_000), NOW, { wokenWhileRunning: true, followUp: false }), {
    delayMs: 0,
    followUp: true,
  });
  assert.deepEqual(nextTimerDelay(at(30_000), NOW, { wokenWhileRunning: false, followUp: true }), {
    delayMs: FOLLOW_UP_MS,
    followUp: false,
  });
});

test("phase wakes: a seen task's move wakes a reporting or webhook trigger, a schedule's on a finish; first sight does not", () => {
  const reporting = { report: {}, source: {} };
  assert.equal(wakeOnPhase({ seen: false }, 'Running', reporting), false);
  assert.equal(wakeOnPhase({ seen: true, phase: 'Running' }, 'Running', reporting), false);
  assert.equal(wakeOnPhase({ seen: true, phase: 'Pending' }, 'Running', reporting), true);
  assert.equal(wakeOnPhase({ seen: true, phase: 'Running' }, 'Succeeded', { source: { webhook: {} } }), true);
  assert.equal(wakeOnPhase({ seen: true, phase: 'Running' }, 'Succeeded', { source: {} }), false);
  // historyLimit: a schedule's pass deletes the finished tasks past it as soon as one finishes.
  assert.equal(wakeOnPhase({ seen: true, phase: 'Running' }, 'Succeeded', { source: { schedule: {} } }), true);
  assert.equal(wakeOnPhase({ seen: true, phase: 'Pending' }, 'Running', { source: { schedule: {} } }), false);
});
