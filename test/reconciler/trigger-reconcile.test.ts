// Table tests of reconcileTrigger: for schedules, forge polls, webhook passes and deliveries, which items
// become tasks, which are held, when the cursor moves, the lookups it asks for before deciding, the report
// actions and when the next pass is due — with the clock and the jitter as inputs. Issue 28's item rules:
// trigger-reconcile-items.test.ts; the backoff and timers: trigger-timing.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTriggerStatusSchema } from '../../controller/api/agent-trigger.ts';
import type { TriggerAction, TriggerDecision, TriggerFacts } from '../../controller/reconciler/trigger-reconcile.ts';
import { reconcileTrigger } from '../../controller/reconciler/trigger-reconcile.ts';
import { TICK_LABEL } from '../../controller/reconciler/trigger-schedule.ts';
import { SCHEDULE_IDLE_MS } from '../../controller/reconciler/trigger-timing.ts';
import {
  NOW,
  GIT_TEMPLATE,
  gitea,
  schedule,
  webhook,
  item,
  comment,
  listed,
  task,
  tickTask,
  MINUTE,
  facts,
  kinds,
  created,
  record,
  after,
  heldItem,
} from './trigger-facts.ts';

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

for (const c of cases) test(c.name, () => c.check(reconcileTrigger(c.in)));
