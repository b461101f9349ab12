// Episode records on a cluster, against the real kube-apiserver: one AgentEpisode per finished episode,
// owned by its AgentTask and found with `kubectl get ae -l episodic.dev/task=NAME`; only the last
// spec.history.keep are kept; a record created before (a restart) is not duplicated, one of an earlier task
// with the same name is replaced; and deleting the task deletes its records (no garbage collector here).
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { EPISODE_CRD_FILE, EPISODE_CRD_NAME } from '../../controller/api/crd.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { EpisodeResultInput } from '../../controller/api/episode-result.ts';
import type { LooseObject as KubeObject } from '../support/loose-object.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { encodeTerminationMessage } from '../../controller/api/termination-message.ts';
import { ensureCluster, kubectl, repoRoot, skipCluster } from '../support/cluster.ts';
import {
  type FakeKubelet,
  agentTaskManifest,
  fakeClaudeSpec,
  getTask,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';
import { waitFor } from '../support/wait.ts';

const skip = skipCluster;

describe('cluster controller: episode records', { skip, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  const apply = (name: string, spec: Record<string, unknown> = {}) =>
    kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, name, fakeClaudeSpec(spec)) });
  /** The task's records as kubectl lists them, oldest first. */
  const records = async (task: string): Promise<KubeObject[]> => {
    const list = JSON.parse(await kubectl(['get', 'ae', '-n', ns, '-l', `episodic.dev/task=${task}`, '-o', 'json']));
    return (list.items as any[]).sort((a, b) => a.record.number - b.record.number);
  };
  const numbers = async (task: string) => (await records(task)).map((r: any) => r.record.number as number);
  /** Ends the task's running episode `n` as its pod would (termination message of the runner). */
  const finish = async (task: string, n: number, result: EpisodeResultInput) => {
    const pod = await waitForPod(client, ns, `${task}-ep-${n}`);
    await kubelet.terminate(await kubelet.setRunning(pod), {
      exitCode: result.exitCode ?? 0,
      message: encodeTerminationMessage(episodeResult(result)),
    });
  };

  // Before the controller starts (hooks run in order): clusterWithCrd() installs only the AgentTask CRD.
  before(
    async () => {
      await ensureCluster();
      await kubectl(['apply', '--server-side', '--force-conflicts', '-f', path.join(repoRoot, EPISODE_CRD_FILE)]);
      await kubectl(['wait', '--for=condition=Established', '--timeout=60s', `crd/${EPISODE_CRD_NAME}`]);
    },
    { timeout: 90 * 60_000 },
  );
  withController('ctl-records', {}, (f) => ({ ns, client, kubelet } = f));

  it('each finished episode → one AgentEpisode, owned and labeled, with outcome, spend and evidence', async () => {
    await apply('chronicle');
    const evidence = {
      workspace: {
        kind: 'git' as const,
        changed: true,
        headBefore: 'a'.repeat(40),
        headAfter: 'b'.repeat(40),
        filesChanged: 2,
        insertions: 9,
        deletions: 1,
      },
      checklist: { done: 1, total: 4 },
    };
    await finish('chronicle', 1, {
      exitCode: 0,
      costUSD: 0.25,
      tokens: { input: 1000, output: 200 },
      evidence,
      message: 'did step 1',
    });
    await finish('chronicle', 2, { exitCode: 0, costUSD: 0.5, completion: 'promise', message: 'all done' });
    const task = await waitForTask(client, ns, 'chronicle', (s) => s.phase === 'Succeeded');
    await waitFor('two records', async () => (await numbers('chronicle')).length === 2);

    const [first, second] = (await records('chronicle')) as any[];
    assert.deepEqual([first.metadata.name, second.metadata.name], ['chronicle-ep-1', 'chronicle-ep-2']);
    assert.deepEqual(first.metadata.labels, {
      'episodic.dev/task': 'chronicle',
      'episodic.dev/episode': '1',
      'app.kubernetes.io/managed-by': 'episodic',
    });
    assert.deepEqual(
      first.metadata.ownerReferences.map((o: any) => [o.kind, o.name, o.uid, o.controller]),
      [['AgentTask', 'chronicle', task.metadata.uid, true]],
    );
    assert.deepEqual(
      [first.record.outcome, first.record.costUSD, first.record.tokens.input, first.record.message],
      ['continue', 0.25, 1000, 'did step 1'],
    );
    assert.deepEqual(first.record.evidence.workspace, evidence.workspace);
    assert.deepEqual(
      [second.record.outcome, second.record.reason, second.record.completion],
      ['succeeded', 'PromiseDetected', 'promise'],
    );
    assert.equal(second.record.finishedAt, task.status?.lastEpisode?.finishedAt);

    const [header, ...rows] = (await kubectl(['get', 'ae', '-n', ns, '-l', 'episodic.dev/task=chronicle']))
      .trim()
      .split('\n');
    assert.deepEqual(header.split(/\s{2,}/), ['NAME', 'TASK', 'EPISODE', 'OUTCOME', 'COST', 'AGE']);
    assert.deepEqual(rows.map((r) => r.split(/\s+/).slice(0, 5)).sort(), [
      ['chronicle-ep-1', 'chronicle', '1', 'continue', '0.25'],
      ['chronicle-ep-2', 'chronicle', '2', 'succeeded', '0.5'],
    ]);
  });

  it('keeps the last spec.history.keep records; older ones are deleted', async () => {
    await apply('brief', { history: { keep: 2 }, limits: { maxEpisodes: 4, episodeTimeoutSeconds: 600 } });
    for (let n = 1; n <= 4; n++) await finish('brief', n, { exitCode: 0, costUSD: 0.01 });
    await waitForTask(client, ns, 'brief', (s) => s.reason === 'MaxEpisodesReached');
    await waitFor('records 3 and 4 only', async () => (await numbers('brief')).join() === '3,4');
  });

  it('a record already there (a restart before the status was written) is not duplicated; one of an earlier task with the name is replaced', async () => {
    await apply('again');
    const uid = (await getTask(client, ns, 'again'))!.metadata.uid;
    const owner = (ownerUid: string) => [
      { apiVersion: 'episodic.dev/v1alpha1', kind: 'AgentTask', name: 'again', uid: ownerUid, controller: true },
    ];
    const preexisting = (name: string, ownerUid: string, message: string) => ({
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentEpisode',
      metadata: {
        name,
        namespace: ns,
        labels: { 'episodic.dev/task': 'again', 'episodic.dev/episode': name.slice(-1) },
        ownerReferences: owner(ownerUid),
      },
      record: { task: 'again', number: Number(name.slice(-1)), outcome: 'continue', exitCode: 0, message },
    });
    await client.create(
      `/apis/episodic.dev/v1alpha1/namespaces/${ns}/agentepisodes`,
      preexisting('again-ep-1', uid as string, 'recorded by the controller before'),
    );
    await client.create(
      `/apis/episodic.dev/v1alpha1/namespaces/${ns}/agentepisodes`,
      preexisting('again-ep-2', '00000000-0000-4000-8000-000000000000', 'an earlier task'),
    );
    await finish('again', 1, { exitCode: 0, message: 'episode 1 again' });
    await finish('again', 2, { exitCode: 0, completion: 'promise', message: 'episode 2' });
    await waitForTask(client, ns, 'again', (s) => s.phase === 'Succeeded');
    const [one, two] = (await waitFor('record 2 replaced', async () => {
      const list = await records('again');
      return (list[1] as any)?.record.message === 'episode 2' ? list : undefined;
    })) as any[];
    assert.equal(
      one.record.message,
      'recorded by the controller before',
      'AlreadyExists with our owner: done, not written twice',
    );
    assert.deepEqual([two.metadata.ownerReferences[0].uid, two.record.outcome], [uid, 'succeeded']);
  });

  it('deleting the AgentTask deletes its records before the finalizer goes', async () => {
    assert.equal((await numbers('chronicle')).length, 2);
    await kubectl(['delete', 'agenttask', 'chronicle', '-n', ns, '--wait=false']);
    await waitFor('the task to be gone', async () => !(await getTask(client, ns, 'chronicle')));
    assert.deepEqual(await numbers('chronicle'), [], 'the controller deleted them (no garbage collector runs here)');
    assert.deepEqual(await numbers('brief'), [3, 4], "another task's records stay");
  });
});
