// reconcile() with spawn/send facts: a parent waits for its children (Waiting/WaitingForChildren) and its
// family's spend caps it; wake: onMessage waits (Waiting/AwaitingMessage) until a message; interrupt stops a
// running episode for a message it did not get (cancelled, not a failure); a start records its messages.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskSpec, AgentTaskStatus } from '../../controller/api/agent-task.ts';
import type { Message } from '../../controller/api/spawn-fields.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { ReconcileInput } from '../../controller/reconciler/reconcile.ts';
import type { SpawnFacts } from '../../controller/reconciler/spawn-decide.ts';

const NOW = new Date('2026-11-25T12:00:00.000Z');

function spec(over: Record<string, unknown> = {}): AgentTaskSpec {
  return AgentTaskSpecSchema.parse({ prompt: 'do it', agent: { command: ['agent'] }, ...over });
}
const between = (over: Partial<AgentTaskStatus> = {}): AgentTaskStatus => ({
  ...emptyStatus(),
  observedGeneration: 1,
  phase: 'Pending',
  episodes: 1,
  ...over,
});
const running = (over: Partial<AgentTaskStatus> = {}): AgentTaskStatus =>
  between({ phase: 'Running', currentEpisode: { number: 1, startedAt: NOW.toISOString() }, ...over });

function input(status: AgentTaskStatus, spawn: SpawnFacts | undefined, s: AgentTaskSpec = spec()): ReconcileInput {
  return {
    namespace: 'default',
    name: 'p',
    generation: 1,
    spec: s,
    status,
    dependencies: {},
    freeSlots: 1,
    now: NOW,
    jitter: 0.5,
    spawn,
  };
}
const m = (id: string): Message => ({ id, from: 'alice', at: NOW.toISOString(), text: 'hi' });
const facts = (over: Partial<SpawnFacts> = {}): SpawnFacts => ({ children: [], waiting: [], ...over });
const starts = (r: ReturnType<typeof reconcile>) => r.actions.some((a) => a.type === 'StartEpisode');

describe('reconcile with spawn and send facts', () => {
  const table: Array<{ name: string; in: ReconcileInput; phase: string; reason: string; start: boolean }> = [
    {
      name: 'no facts gathered: as before',
      in: input(between(), undefined),
      phase: 'Running',
      reason: 'EpisodeRunning',
      start: true,
    },
    {
      name: 'a child still running: the parent waits',
      in: input(between(), facts({ children: [{ name: 'p-a', phase: 'Running', costUSD: 0 }] })),
      phase: 'Waiting',
      reason: 'WaitingForChildren',
      start: false,
    },
    {
      name: 'every child terminal: the next episode starts',
      in: input(between(), facts({ children: [{ name: 'p-a', phase: 'Succeeded', costUSD: 0 }] })),
      phase: 'Running',
      reason: 'EpisodeRunning',
      start: true,
    },
    {
      name: 'awaitChildren: false never waits',
      in: input(
        between(),
        facts({ children: [{ name: 'p-a', phase: 'Running', costUSD: 0 }] }),
        spec({ awaitChildren: false }),
      ),
      phase: 'Running',
      reason: 'EpisodeRunning',
      start: true,
    },
    {
      name: 'the children’s spend reaches the parent’s maxCostUSD',
      in: input(
        between({ costUSD: 0.4 }),
        facts({
          children: [{ name: 'p-a', phase: 'Succeeded', costUSD: 0.6 }],
          caps: [
            {
              task: 'p',
              own: true,
              maxCostUSD: 1,
              othersUSD: 0.6,
              running: [],
              finished: { costUSD: 0.6, episodes: 1 },
            },
          ],
        }),
        spec({ limits: { maxCostUSD: 1 } }),
      ),
      phase: 'NeedsReview',
      reason: 'BudgetExceeded',
      start: false,
    },
    {
      name: 'interrupt without news: nothing stops',
      in: input(running(), facts(), spec({ interrupt: true })),
      phase: 'Running',
      reason: 'EpisodeRunning',
      start: false,
    },
    {
      name: 'the mailbox unread (the pass began in a step without it) and the starting prompt names it: not yet',
      in: input(between(), facts({ mailboxUnread: true }), spec({ prompt: 'answer {{messages}}' })),
      phase: 'Pending',
      reason: 'ReadingMailbox',
      start: false,
    },
    {
      name: 'the mailbox unread and the starting prompt does not name it: starts',
      in: input(between(), facts({ mailboxUnread: true })),
      phase: 'Running',
      reason: 'EpisodeRunning',
      start: true,
    },
  ];
  for (const c of table) {
    it(c.name, () => {
      const out = reconcile(c.in);
      assert.deepEqual([out.status.phase, out.status.reason, starts(out)], [c.phase, c.reason, c.start]);
    });
  }

  it('a mailbox that came up in a pass is read by the next one, at once, which starts with its messages', () => {
    const reading = spec({ prompt: 'answer {{messages}}' });
    const first = reconcile(input(between(), facts({ mailboxUnread: true }), reading));
    assert.equal(first.requeueAfterMs, 0);
    const next = reconcile(input(first.status, facts({ waiting: [m('a')] }), reading));
    assert.ok(starts(next));
    assert.deepEqual(next.status.mailbox, { episode: 2, delivered: ['a'] });
  });

  it('wake: onMessage waits after an episode until a message arrives', () => {
    const onMessage = spec({ wake: 'onMessage' });
    const waiting = reconcile(input(between(), facts(), onMessage));
    assert.deepEqual(
      [waiting.status.phase, waiting.status.reason, starts(waiting)],
      ['Waiting', 'AwaitingMessage', false],
    );
    const woken = reconcile(input(between(), facts({ waiting: [m('a.1.0')] }), onMessage));
    assert.ok(starts(woken));
    assert.deepEqual(woken.status.mailbox, { episode: 2, delivered: ['a.1.0'] }, 'on record before it starts');
  });

  it('interrupt: a message the running episode did not get stops it as a cancel', () => {
    const out = reconcile(input(running(), facts({ waiting: [m('a.1.0')] }), spec({ interrupt: true })));
    assert.deepEqual(out.actions, [{ type: 'StopEpisode', number: 1, reason: 'cancelled' }]);
    const got = running({ mailbox: { episode: 1, delivered: ['a.1.0'] } });
    const kept = reconcile(input(got, facts({ waiting: [m('a.1.0')] }), spec({ interrupt: true })));
    assert.deepEqual(kept.actions, [], 'a message it got does not stop it');
    const off = reconcile(input(running(), facts({ waiting: [m('a.1.0')] })));
    assert.deepEqual(off.actions, [], 'interrupt off');
  });
});
