// reconcileTrigger's item rules of issue 28, table-tested: the token's own user triggers (loops are prevented
// by the report marker), items that get no task are counted by reason, and a commenter whose permission the
// token cannot read holds that item only (status.itemsUndecided, the cursor stays) — resumes too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTriggerStatusSchema } from '../../controller/api/agent-trigger.ts';
import { REPORT_MARKER_PREFIX } from '../../controller/api/forge-item.ts';
import type { TriggerAction, TriggerDecision, TriggerFacts } from '../../controller/reconciler/trigger-reconcile.ts';
import { reconcileTrigger } from '../../controller/reconciler/trigger-reconcile.ts';
import { gitea, item, comment, listed, task, facts, created, record } from './trigger-facts.ts';

const cases: Array<{ name: string; in: TriggerFacts; check: (d: TriggerDecision) => void }> = [
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
];

for (const c of cases) test(c.name, () => c.check(reconcileTrigger(c.in)));
