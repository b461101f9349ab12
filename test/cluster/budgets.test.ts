// AgentBudgets on a real kube-apiserver: the CRD, the informer, the /status subresource, and tasks held by a
// rolling window (BudgetWindow) and stopped by a total budget (BudgetExceeded), with the real runner in
// episode pods played out by FakeKubelet.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  type FakeKubelet,
  fakeClaudeSpec,
  listPods,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';
import { waitFor } from '../support/wait.ts';

const BUDGET_CRD = path.join(import.meta.dirname, '..', '..', 'crds', 'episodic.dev_agentbudgets.yaml');

describe('cluster controller: AgentBudgets', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  before(async () => {
    await kubectl(['apply', '--server-side', '--force-conflicts', '-f', BUDGET_CRD]);
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/agentbudgets.episodic.dev']);
  });
  withController('ctl-budgets', {}, (f) => ({ ns, client, kubelet } = f));

  const apply = (doc: object) => kubectl(['apply', '-f', '-'], { input: JSON.stringify(doc) });
  const budget = (name: string, spec: object) =>
    apply({ apiVersion: 'episodic.dev/v1alpha1', kind: 'AgentBudget', metadata: { name, namespace: ns }, spec });
  const task = (name: string, team: string) =>
    apply({
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTask',
      metadata: { name, namespace: ns, labels: { team } },
      spec: fakeClaudeSpec({ backoff: { initialSeconds: 0, factor: 1, maxSeconds: 0 } }),
    });
  const costs = { '.fake-agent.json': JSON.stringify({ default: { mode: 'continue', costUSD: 0.03 } }) };
  const getBudget = async (name: string) =>
    JSON.parse(await kubectl(['get', 'agentbudget', '-n', ns, name, '-o', 'json']));

  it('a 1h window holds the task Waiting (BudgetWindow) until capacity returns; a spent total budget stops its task (BudgetExceeded)', async () => {
    await budget('hourly', { selector: { matchLabels: { team: 'a' } }, limitUSD: 0.05, window: '1h' });
    await budget('once', {
      selector: { matchExpressions: [{ key: 'team', operator: 'In', values: ['b'] }] },
      limitUSD: 0.02,
      window: 'total',
    });
    await task('held', 'a');
    await task('stopped', 'b');
    const started = Date.now();
    await kubelet.runEpisode(await waitForPod(client, ns, 'held-ep-1'), { files: costs });
    await kubelet.runEpisode(await waitForPod(client, ns, 'stopped-ep-1'), { files: costs });

    // $0.03 spent + an average of $0.03 would cross $0.05: wait until the first episode's spend leaves the hour.
    const held = await waitForTask(client, ns, 'held', (s) => s.reason === 'BudgetWindow');
    assert.equal(held.status.phase, 'Waiting');
    assert.equal(held.status.episodes, 1);
    const next = Date.parse(held.status.nextEpisodeAt);
    assert.ok(next >= started + 3_600_000 - 60_000 && next <= Date.now() + 3_600_000, held.status.nextEpisodeAt);
    assert.match(
      held.status.message,
      /AgentBudget hourly: spent \$0\.03 of \$0\.05 and the next episode is expected to cost \$0\.03 in the 1h window/,
    );

    const stopped = await waitForTask(client, ns, 'stopped', (s) => s.reason === 'BudgetExceeded');
    assert.equal(stopped.status.phase, 'NeedsReview');
    assert.match(stopped.status.message, /AgentBudget once: spent \$0\.03 of \$0\.02 \(total\)/);
    assert.deepEqual((await listPods(client, ns)).map((p) => p.metadata.name).sort(), ['held-ep-1', 'stopped-ep-1']);

    const hourly = await waitFor('hourly budget status', async () => {
      const b = await getBudget('hourly');
      return b.status?.tasksHeld === 1 && b.status?.spentUSD === 0.03 ? b : undefined;
    });
    assert.equal(hourly.status.remainingUSD, 0.02);
    assert.deepEqual(hourly.status.heldTasks, ['held']);
    assert.equal(hourly.status.window, '1h');
    assert.equal(hourly.status.episodesLastHour, 1);
    assert.ok(Date.parse(hourly.status.windowFreesAt) > Date.now());
    assert.equal(hourly.status.ledger.tasks[0].task, 'held');
    const once = await waitFor('total budget status', async () => {
      const b = await getBudget('once');
      return b.status?.tasksHeld === 1 ? b : undefined;
    });
    assert.equal(once.status.remainingUSD, 0);
    assert.equal(once.status.windowFreesAt, undefined);

    const table = await kubectl(['get', 'ab', '-n', ns, 'hourly']);
    assert.match(table, /NAME\s+WINDOW\s+SPENT\s+LIMIT\s+REMAINING\s+HELD\s+AGE/);
    assert.match(table, /hourly\s+1h\s+0\.03\s+0\.05\s+0\.02\s+1\s/);

    // Raising the limit frees the held task at once: the hold is decided afresh when a budget changes.
    await budget('hourly', { selector: { matchLabels: { team: 'a' } }, limitUSD: 1, window: '1h' });
    await waitForPod(client, ns, 'held-ep-2');
  });

  it('the apiserver refuses an AgentBudget with an unknown field', async () => {
    await assert.rejects(budget('typo', { limitUsd: 1 }), /unknown field "spec\.limitUsd"/);
  });
});
