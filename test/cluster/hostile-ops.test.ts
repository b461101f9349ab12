// The hostile agent of issue 20 §4 on the real apiserver (test/support/hostile-ops.ts), through the
// controller process and the real runner in each FakeKubelet pod: its escapes are refused, nothing it
// makes leaves its namespace or its bounds (limits, maxChildren, depth 3), and the secrets it copies into its
// ops reach no status, Event or controller log line.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import { withControllerProcesses } from '../support/controller-processes.ts';
import type { ProcessFixture } from '../support/controller-processes.ts';
import * as hostile from '../support/hostile-ops.ts';
import { agentTaskManifest, type FakeKubelet, NODE, waitForPod, waitForTask } from '../support/kubelet.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

const OPS_AGENT = path.resolve(import.meta.dirname, '../agents/ops-agent.mjs');

describe('cluster controller: a hostile agent', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  let start: ProcessFixture['start'];
  withControllerProcesses('ctl-hostile', (f) => ({ ns, client, kubelet, start } = f));

  it('stays in its namespace, limits, maxChildren and depth; no secret in status, Events or the log', async () => {
    const controller = await start();
    const agent = { image: 'ghcr.io/example/agent:1', command: [NODE, OPS_AGENT], output: 'text' };
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'evil', hostile.hostileSpec(agent)) });
    for (const task of hostile.HOSTILE_TASKS) {
      const pod = await waitForPod(client, ns, `${task}-ep-1`, 30_000);
      assert.equal((await kubelet.runEpisode(pod)).exitCode, 0, task);
    }
    for (const task of hostile.HOSTILE_TASKS) await waitForTask(client, ns, task, (s) => s.phase === 'Succeeded');
    const events = await kubectl(['get', 'events', '-n', ns, '-o', 'json']);
    const depth = JSON.parse(events).items.find((e: any) => e.involvedObject.name === 'evil-d-d-d');
    assert.ok(depth, 'the last of the chain has an Event');
    assert.match(events, hostile.DEPTH_REJECTION);

    const tasks = JSON.parse(await kubectl(['get', 'at', '-n', ns, '-o', 'json'])).items as any[];
    assert.deepEqual(tasks.map((t) => t.metadata.name).sort(), [...hostile.HOSTILE_TASKS].sort());
    const statuses = JSON.stringify(tasks.map((t) => t.status));
    const evil = tasks.find((t) => t.metadata.name === 'evil');
    const rejected = evil.status.lastEpisode.opsRejected;
    for (const words of hostile.PARSE_REJECTIONS.slice(0, 2)) assert.match(rejected, words);
    assert.match(rejected, /5 more lines rejected/);
    const said = JSON.parse(events)
      .items.filter((e: any) => e.reason === 'OpsRejected')
      .map((e: any) => e.message)
      .join('\n');
    for (const words of hostile.APPLY_REJECTIONS) assert.match(said, words);
    assert.equal((await kubectl(['get', 'at', '-n', 'kube-system', '-o', 'name'])).trim(), '', 'nothing elsewhere');
    const mailboxes = await kubectl(['get', 'cm', '-n', 'kube-system', '-l', 'episodic.dev/mailbox', '-o', 'name']);
    assert.equal(mailboxes.trim(), '');
    assert.ok(evil.status.lastEpisode.ops.includes('set [redacted]'));

    const log = JSON.stringify(controller.logs);
    for (const secret of [hostile.ENV_SECRET, hostile.TOKEN, 'sk-live']) {
      assert.ok(!statuses.includes(secret), `status: ${secret}`);
      assert.ok(!events.includes(secret), `events: ${secret}`);
      assert.ok(!log.includes(secret), `log: ${secret}`);
    }
  });
});
