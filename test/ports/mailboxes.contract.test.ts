// One contract for mailboxes (`send`), locally (a file per message under the state dir) and on a cluster (a
// ConfigMap per task, against the real apiserver): order, idempotent ids, bounds, acknowledgement, names.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAILBOX_CHARS_MAX, MAILBOX_MESSAGES_MAX } from '../../controller/core/mailboxes.ts';
import type { Mailboxes } from '../../controller/core/mailboxes.ts';
import type { Message } from '../../controller/api/spawn-fields.ts';
import { KubeMailboxes } from '../../controller/sinks/cluster/mailboxes.ts';
import { LocalMailboxes } from '../../controller/sinks/local/mailboxes.ts';
import { skipCluster } from '../support/cluster.ts';
import { clusterWithCrd, createNamespace, testClient } from '../support/kubelet.ts';
import { tempDir } from '../support/local.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

interface Harness {
  namespace: string;
  /** A fresh store over the same durable state (a restarted controller, or `episodic send` in another process). */
  fresh(): Mailboxes;
  close(): Promise<void>;
}

async function localHarness(): Promise<Harness> {
  const stateDir = tempDir();
  return { namespace: 'default', fresh: () => new LocalMailboxes(stateDir), close: async () => {} };
}

async function clusterHarness(): Promise<Harness> {
  const cluster = await clusterWithCrd();
  const client = await testClient(cluster);
  const namespace = await createNamespace('mailbox');
  return { namespace, fresh: () => new KubeMailboxes(client), close: async () => client.close() };
}

const msg = (id: string, at: string, text = `text of ${id}`, from = 'alice'): Message => ({ id, from, at, text });

for (const impl of [
  { name: 'local', make: localHarness, skip: false as const },
  { name: 'cluster', make: clusterHarness, skip: skipCluster },
]) {
  describe(`mailboxes contract: ${impl.name}`, { skip: impl.skip, timeout: SUITE_HANG_GUARD_MS }, () => {
    let h: Harness;
    before(async () => (h = await impl.make()), { timeout: 90 * 60_000 });
    after(async () => h?.close());

    it('reads oldest first, across a restart; the same id again is one message', async () => {
      const box = h.fresh();
      assert.deepEqual(await box.send(h.namespace, 'bob', msg('alice.2.0', '2026-11-25T10:00:02Z')), {
        result: 'sent',
      });
      assert.deepEqual(await box.send(h.namespace, 'bob', msg('zed.1.0', '2026-11-25T10:00:01Z', undefined, 'zed')), {
        result: 'sent',
      });
      assert.deepEqual(await box.send(h.namespace, 'bob', msg('alice.2.0', '2026-11-25T10:00:09Z')), {
        result: 'exists',
      });
      const read = await h.fresh().read(h.namespace, 'bob');
      assert.deepEqual(
        read.map((m) => [m.id, m.from, m.text]),
        [
          ['zed.1.0', 'zed', 'text of zed.1.0'],
          ['alice.2.0', 'alice', 'text of alice.2.0'],
        ],
      );
      assert.deepEqual(await box.read(h.namespace, 'carol'), [], 'another task’s mailbox is its own');
    });

    it("a sender's ops arrive in order: an op message older than the newest taken from it was taken before", async () => {
      const box = h.fresh();
      await box.send(h.namespace, 'erin', msg('alice.2.0', '2026-11-25T10:00:02Z'));
      await box.ack(h.namespace, 'erin', ['alice.2.0']);
      assert.deepEqual(await h.fresh().send(h.namespace, 'erin', msg('alice.1.0', '2026-11-25T10:00:01Z')), {
        result: 'exists',
      });
      assert.deepEqual(await box.send(h.namespace, 'erin', msg('alice.3.0', '2026-11-25T10:00:03Z')), {
        result: 'sent',
      });
      assert.deepEqual(
        (await box.read(h.namespace, 'erin')).map((m) => m.id),
        ['alice.3.0'],
      );
    });

    it('acknowledged messages are gone, others stay; acknowledging again is harmless', async () => {
      const box = h.fresh();
      await box.send(h.namespace, 'dave', msg('x.1.0', '2026-11-25T10:00:01Z'));
      await box.send(h.namespace, 'dave', msg('x.1.1', '2026-11-25T10:00:02Z'));
      await box.ack(h.namespace, 'dave', ['x.1.0']);
      await box.ack(h.namespace, 'dave', ['x.1.0', 'never-sent']);
      assert.deepEqual(
        (await h.fresh().read(h.namespace, 'dave')).map((m) => m.id),
        ['x.1.1'],
      );
      await box.drop(h.namespace, 'dave');
      assert.deepEqual(await box.read(h.namespace, 'dave'), []);
    });

    it('is bounded by count and by characters, and refuses names that are paths', async () => {
      const box = h.fresh();
      for (let i = 0; i < MAILBOX_MESSAGES_MAX; i++) {
        const sent = await box.send(h.namespace, 'full', msg(`s.1.${i}`, '2026-11-25T10:00:00Z', 'x'));
        assert.equal(sent.result, 'sent');
      }
      const over = await box.send(h.namespace, 'full', msg('s.1.99', '2026-11-25T10:00:00Z'));
      assert.equal(over.result, 'refused');
      assert.equal((await box.read(h.namespace, 'full')).length, MAILBOX_MESSAGES_MAX);

      const half = 'y'.repeat(MAILBOX_CHARS_MAX / 2);
      assert.equal((await box.send(h.namespace, 'big', msg('b.1.0', '2026-11-25T10:00:00Z', half))).result, 'sent');
      assert.equal((await box.send(h.namespace, 'big', msg('b.1.1', '2026-11-25T10:00:00Z', half))).result, 'sent');
      const huge = await box.send(h.namespace, 'big', msg('b.1.2', '2026-11-25T10:00:00Z', 'z'));
      assert.equal(huge.result, 'refused');

      for (const to of ['../bob', 'a/b', 'Bob', '']) {
        assert.equal((await box.send(h.namespace, to, msg('e.1.0', '2026-11-25T10:00:00Z'))).result, 'refused', to);
      }
      assert.equal((await box.send(h.namespace, 'bob', msg('../x', '2026-11-25T10:00:00Z'))).result, 'refused');
      assert.equal((await box.send('../other', 'bob', msg('e.1.1', '2026-11-25T10:00:00Z'))).result, 'refused');
    });
  });
}
