// spawn and send ops carried out through both modes' stores (local files; the real apiserver), from op lines
// as an agent writes them to $EPISODIC_OPS: a planner spawning workers and sending, applied twice (a kill -9
// between applying and recording it), and a hostile agent trying every way out of its bounds.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { validateSpec } from '../../controller/api/validate.ts';
import { parseOps } from '../../controller/api/ops.ts';
import { ManualClock } from '../../controller/core/clock.ts';
import type { CreatedTasks, TaskOwner } from '../../controller/core/created-tasks.ts';
import { MAILBOX_MESSAGES_MAX } from '../../controller/core/mailboxes.ts';
import type { Mailboxes } from '../../controller/core/mailboxes.ts';
import type { DesiredTask } from '../../controller/core/ports.ts';
import { sendHandler, spawnAndSend, spawnHandler } from '../../controller/ops/spawn-send.ts';
import type { SpawnSendDeps } from '../../controller/ops/spawn-send.ts';
import { KubeMailboxes } from '../../controller/sinks/cluster/mailboxes.ts';
import { LocalMailboxes } from '../../controller/sinks/local/mailboxes.ts';
import { KubeCreatedTasks } from '../../controller/sources/cluster/created-tasks.ts';
import { LocalCreatedTasks } from '../../controller/sources/local/created-tasks.ts';
import { skipCluster } from '../support/cluster.ts';
import { clusterWithCrd, createNamespace, testClient } from '../support/kubelet.ts';
import { tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

interface Stores {
  namespace: string;
  created: CreatedTasks;
  mailboxes: Mailboxes;
  owner(task: DesiredTask): TaskOwner;
  close(): Promise<void>;
}

async function localStores(): Promise<Stores> {
  const stateDir = tempDir();
  return {
    namespace: 'default',
    created: new LocalCreatedTasks({ stateDir }),
    mailboxes: new LocalMailboxes(stateDir),
    owner: (t) => ({ kind: 'AgentTask', namespace: t.namespace, name: t.name, file: join(stateDir, 'x.yaml') }),
    close: async () => {},
  };
}

async function clusterStores(): Promise<Stores> {
  const client = await testClient(await clusterWithCrd());
  const namespace = await createNamespace('spawn-ops');
  // A CRD applied just now (by this or a parallel test) answers 429 while its storage initializes.
  const collection = `/apis/episodic.dev/v1alpha1/namespaces/${namespace}/agenttasks`;
  await waitFor('agenttasks served', () => client.get(collection).then(() => true));
  return {
    namespace,
    created: new KubeCreatedTasks(client),
    mailboxes: new KubeMailboxes(client),
    owner: (t) => ({ kind: 'AgentTask', namespace: t.namespace, name: t.name }),
    close: async () => client.close(),
  };
}

function task(namespace: string, name: string, over: Record<string, unknown> = {}, labels = {}): DesiredTask {
  const v = validateSpec({
    prompt: 'plan',
    agent: { command: ['claude', '-p'] },
    workspace: 'ws/planner',
    limits: { maxEpisodes: 5, maxCostUSD: 2 },
    ...over,
  });
  assert.ok(v.ok);
  return {
    key: `${namespace}/${name}`,
    namespace,
    name,
    generation: 1,
    spec: v.spec,
    dependsOn: [],
    deleting: false,
    labels,
  };
}

const lines = (...ops: unknown[]) => ops.map((o) => (typeof o === 'string' ? o : JSON.stringify(o))).join('\n');

for (const impl of [
  { name: 'local', make: localStores, skip: false as const },
  { name: 'cluster', make: clusterStores, skip: skipCluster },
]) {
  describe(`spawn and send ops: ${impl.name}`, { skip: impl.skip, timeout: SUITE_HANG_GUARD_MS }, () => {
    let s: Stores;
    let deps: SpawnSendDeps<DesiredTask>;
    const existing = new Set(['planner', 'reviewer', 'planner-a']);
    before(
      async () => {
        s = await impl.make();
        deps = {
          created: s.created,
          mailboxes: s.mailboxes,
          ownerOf: (t) => s.owner(t),
          taskExists: (_ns, name) => existing.has(name),
          clock: new ManualClock(new Date('2026-11-25T12:00:00Z')),
        };
      },
      { timeout: 90 * 60_000 },
    );
    after(async () => s?.close());

    it('a planner spawns workers and sends; applying the same episode again makes nothing twice', async () => {
      const planner = task(s.namespace, 'planner');
      const { ops, rejected } = parseOps(
        lines(
          { op: 'spawn', name: 'a', prompt: 'part a' },
          { op: 'spawn', name: 'b', prompt: 'part b', limits: { maxCostUSD: 0.5 } },
          { op: 'send', to: 'reviewer', message: 'plan ready' },
        ),
      );
      assert.deepEqual(rejected, []);
      for (let i = 0; i < 2; i++) {
        assert.deepEqual(await spawnHandler(deps)(planner, 1, ops), { rejected: [] });
        assert.deepEqual(await sendHandler(deps)(planner, 1, ops), { rejected: [] });
      }
      const children = await s.created.list(s.owner(planner));
      assert.deepEqual(children.map((c) => c.name).sort(), ['planner-a', 'planner-b']);
      assert.equal(
        (children.find((c) => c.name === 'planner-b')?.spec.limits as { maxCostUSD?: number } | undefined)?.maxCostUSD,
        0.5,
      );
      const inbox = await s.mailboxes.read(s.namespace, 'reviewer');
      assert.deepEqual(
        inbox.map((m) => [m.id, m.from, m.text]),
        [['planner.1.0', 'planner', 'plan ready']],
      );
    });

    it('a message delivered and acknowledged is not sent again when its ops apply again; a new task of that name sends anew', async () => {
      const ended = { number: 4, finishedAt: '2026-11-25T11:00:00.000Z' };
      const sender = task(s.namespace, 'teller');
      const again = { ...deps, status: () => ({ lastEpisode: ended }) as never };
      const ops = parseOps(lines({ op: 'send', to: 'reviewer', message: 'once' })).ops;
      const inbox = async () => (await s.mailboxes.read(s.namespace, 'reviewer')).filter((m) => m.from === 'teller');
      assert.deepEqual(await sendHandler(again)(sender, 4, ops), { rejected: [] });
      const [sent] = await inbox();
      assert.deepEqual([sent?.id, sent?.at], ['teller.4.0', ended.finishedAt], 'its time is the episode’s end');
      await s.mailboxes.ack(s.namespace, 'reviewer', ['teller.4.0']);
      assert.deepEqual(await sendHandler(again)(sender, 4, ops), { rejected: [] }, 'a retry, or after a kill -9');
      assert.deepEqual(await inbox(), [], 'not delivered twice');
      const remade = {
        ...deps,
        status: () => ({ lastEpisode: { number: 1, finishedAt: '2026-11-25T11:30:00.000Z' } }) as never,
      };
      await sendHandler(remade)(sender, 1, ops);
      assert.deepEqual(
        (await inbox()).map((m) => m.id),
        ['teller.1.0'],
      );
    });

    it("spawnAndSend wires a controller's source, sink and injected clock: a message's time is that clock's when the episode has not ended on record", async () => {
      const clock = new ManualClock(new Date('2026-11-25T09:15:00Z'));
      const sender = task(s.namespace, 'wired');
      const known = new Map([[`${s.namespace}/reviewer`, task(s.namespace, 'reviewer')]]);
      const { send } = spawnAndSend<DesiredTask>({
        created: s.created,
        mailboxes: s.mailboxes,
        ownerOf: (t) => s.owner(t),
        tasks: known,
        statuses: { read: () => ({ lastEpisode: { number: 1, finishedAt: '2026-11-25T08:00:00.000Z' } }) as never },
        clock,
      });
      const ops = parseOps(
        lines({ op: 'send', to: 'reviewer', message: 'hi' }, { op: 'send', to: 'ghost', message: 'x' }),
      ).ops;
      const { rejected } = await send(sender, 2, ops);
      assert.deepEqual(
        rejected.map((r) => [r.index, r.message]),
        [[1, `send to ghost: no such task in namespace ${s.namespace}`]],
      );
      const mine = (await s.mailboxes.read(s.namespace, 'reviewer')).filter((m) => m.from === 'wired');
      assert.deepEqual(
        mine.map((m) => [m.id, m.at]),
        [['wired.2.0', '2026-11-25T09:15:00.000Z']],
      );
    });

    it('a hostile agent: every escape is rejected with a message, nothing leaves its bounds', async () => {
      const evil = task(s.namespace, 'evil', { limits: { maxEpisodes: 5, maxCostUSD: 1, maxChildren: 3 } });
      const secret = 'sk-ant-SECRET-TOKEN-1234';
      const text = lines(
        { op: 'spawn', name: '../etc', prompt: 'x' },
        { op: 'spawn', name: 'x', prompt: 'x', namespace: 'kube-system' },
        { op: 'spawn', name: 'kube-system/x', prompt: 'x' },
        { op: 'spawn', name: 'rich', prompt: 'x', limits: { maxCostUSD: 1000 } },
        { op: 'spawn', name: 'fork', prompt: 'x', limits: { maxChildren: 1000 } },
        { op: 'spawn', name: 'out', prompt: 'x', workspace: '../../home' },
        { op: 'spawn', name: 'mask', prompt: 'x', labels: { 'episodic.dev/parent': 'someone' } },
        { op: 'send', to: '../planner', message: secret },
        { op: 'send', to: 'reviewer', message: 'y'.repeat(5000) },
        { op: 'send', to: 'nobody', message: secret },
        ...Array.from({ length: 6 }, (_, i) => ({ op: 'spawn', name: `storm-${i}`, prompt: 'x' })),
      );
      const parsed = parseOps(text);
      assert.equal(parsed.rejected.length, 5, JSON.stringify(parsed.rejected));
      assert.ok(!JSON.stringify(parsed.rejected).includes('SECRET'), 'no payload in rejection messages');
      const spawned = await spawnHandler(deps)(evil, 1, parsed.ops);
      const sent = await sendHandler(deps)(evil, 1, parsed.ops);
      const messages = [...spawned.rejected, ...sent.rejected].map((r) => r.message).join('\n');
      assert.match(messages, /maxCostUSD 1000 is above the parent's 1/);
      assert.match(messages, /maxChildren 1000 is above the parent's 3/);
      assert.match(messages, /leads out of the parent's workspace/);
      assert.match(messages, /is the controller's/);
      assert.match(messages, /send to nobody: no such task/);
      assert.match(messages, /maxChildren 3 reached/);
      assert.ok(!messages.includes('SECRET'));
      const children = await s.created.list(s.owner(evil));
      assert.deepEqual(children.map((c) => c.name).sort(), ['evil-storm-0', 'evil-storm-1', 'evil-storm-2']);
      assert.ok(children.every((c) => c.namespace === s.namespace));
    });

    it('depth: a grandchild’s child is refused; a flood of messages stops at the mailbox bound', async () => {
      const deep = task(s.namespace, 'deep', {}, { 'episodic.dev/depth': '3', 'episodic.dev/parent': 'x' });
      const refused = await spawnHandler(deps)(deep, 1, parseOps(lines({ op: 'spawn', name: 'd', prompt: 'x' })).ops);
      assert.match(refused.rejected[0]?.message ?? '', /depth 4 is past 3/);

      const flood = lines(
        ...Array.from({ length: 30 }, () => ({ op: 'send', to: 'planner-a', message: 'z'.repeat(100) })),
      );
      const loud = task(s.namespace, 'loud');
      for (let episode = 1; episode <= 2; episode++) await sendHandler(deps)(loud, episode, parseOps(flood).ops);
      assert.equal((await s.mailboxes.read(s.namespace, 'planner-a')).length, MAILBOX_MESSAGES_MAX);
    });
  });
}
