// Cluster mode end to end against the real kube-apiserver: kubectl apply → episode pods → the real
// runner (played out by FakeKubelet) → status, Events and metrics, all read back the way a person would.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { EpisodeConfigSchema } from '../../controller/api/episode-config.ts';
import { EPISODE_CRD_FILE, EPISODE_CRD_NAME } from '../../controller/api/crd.ts';
import { ensureCluster, kubectl, repoRoot, skipCluster } from '../support/cluster.ts';
import {
  type FakeKubelet,
  agentTaskManifest,
  fakeClaudeSpec,
  listPods,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';
import { waitFor } from '../support/wait.ts';

const skip = skipCluster;

describe('cluster controller: episodes', { skip, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let controller: ClusterController;
  let kubelet: FakeKubelet;
  const apply = (name: string, spec: Record<string, unknown>) =>
    kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, name, spec) });

  withController('ctl-episodes', {}, (f) => ({ ns, client, kubelet, controller } = f));

  it('kubectl apply → the first episode pod, with the runner, the config, an owner and a finalizer', async () => {
    await kubectl(['create', 'secret', 'generic', 'llm', '-n', ns, '--from-literal=key=sk-test-SECRET-value']);
    await apply(
      'shape',
      fakeClaudeSpec(
        {},
        { env: [{ name: 'ANTHROPIC_API_KEY', valueFrom: { secretKeyRef: { name: 'llm', key: 'key' } } }] },
      ),
    );
    const pod = await waitForPod(client, ns, 'shape-ep-1');
    const task = await waitForTask(client, ns, 'shape', (s) => s.phase === 'Running');
    assert.deepEqual(task.metadata.finalizers, ['episodic.dev/cleanup']);
    assert.equal(task.status?.currentEpisode?.number, 1);
    assert.equal(task.status?.currentEpisode?.podName, 'shape-ep-1', 'status names the pod it created');
    assert.equal(task.status?.observedGeneration, task.metadata.generation);

    assert.equal(pod.metadata.labels!['episodic.dev/task'], 'shape');
    assert.equal(pod.metadata.labels!['episodic.dev/episode'], '1');
    assert.deepEqual(
      pod.metadata.ownerReferences!.map((o: any) => [o.kind, o.name, o.uid, o.controller, o.blockOwnerDeletion]),
      [['AgentTask', 'shape', task.metadata.uid, true, true]],
    );
    assert.equal(pod.spec.restartPolicy, 'Never');
    assert.equal(pod.spec.activeDeadlineSeconds, 600);
    const c = pod.spec.containers[0];
    assert.deepEqual(c.command.slice(0, 3), ['episodic', 'episode', '--']);
    assert.equal(c.image, 'ghcr.io/example/agent:1');
    assert.equal(c.terminationMessagePolicy, 'File');
    assert.equal(c.securityContext.runAsNonRoot, true);
    const env = Object.fromEntries(c.env.map((e: any) => [e.name, e]));
    assert.equal(env.EPISODIC_PROMPT.value, 'Work on shape, episode 1 of 5.');
    const config = EpisodeConfigSchema.parse(JSON.parse(env.EPISODIC_EPISODE_CONFIG.value));
    assert.deepEqual([config.task, config.namespace, config.episode, config.maxEpisodes], ['shape', ns, 1, 5]);
    assert.deepEqual(env.ANTHROPIC_API_KEY.valueFrom, { secretKeyRef: { name: 'llm', key: 'key' } });

    const table = await kubectl(['get', 'at', '-n', ns, 'shape']);
    assert.match(table, /NAME\s+PHASE\s+EPISODES\s+COST\s+REASON\s+STEP\s+PROGRESS\s+PARENT\s+AGE/);
    assert.match(table, /shape\s+Running\s+1\s+0\s+EpisodeRunning/);
    // Secrets stay references: nothing the controller wrote contains the value.
    const written =
      (await kubectl(['get', 'at', 'shape', '-n', ns, '-o', 'json'])) +
      (await kubectl(['get', 'events', '-n', ns, '-o', 'json']));
    assert.ok(!written.includes('sk-test-SECRET-value'));
  });

  it('a successful episode (real runner) → Succeeded, readable with kubectl get, -o wide, describe and events', async () => {
    await apply('ok', fakeClaudeSpec());
    const pod = await waitForPod(client, ns, 'ok-ep-1');
    const run = await kubelet.runEpisode(pod, { env: { FAKE_AGENT_MODE: 'success', FAKE_AGENT_COST_USD: '0.25' } });
    assert.equal(run.exitCode, 0, run.message);
    const task = await waitForTask(client, ns, 'ok', (s) => s.phase === 'Succeeded');
    assert.equal(task.status?.reason, 'PromiseDetected');
    assert.equal(task.status?.costUSD, 0.25);
    assert.equal(task.status?.lastEpisode?.outcome, 'succeeded');
    assert.equal(task.status?.currentEpisode, undefined);
    assert.deepEqual(
      task.status?.conditions.map((c: any) => [c.type, c.status]),
      [
        ['Progressing', 'False'],
        ['Ready', 'True'],
      ],
    );

    const wide = await kubectl(['get', 'at', 'ok', '-n', ns, '-o', 'wide']);
    assert.match(wide, /LAST OUTCOME\s+NEXT EPISODE/);
    assert.match(wide, /ok\s+Succeeded\s+1\s+0\.25\s+PromiseDetected\s+\S+\s+succeeded/);
    assert.equal((await kubectl(['get', 'at', 'ok', '-n', ns, '-o', 'jsonpath={.status.phase}'])).trim(), 'Succeeded');
    await waitFor('events', async () => {
      const events = await kubectl([
        'get',
        'events',
        '-n',
        ns,
        '--field-selector',
        'involvedObject.name=ok',
        '-o',
        'jsonpath={range .items[*]}{.reason}{"\\n"}{end}',
      ]);
      return events.includes('EpisodeStarted') && events.includes('EpisodeSucceeded');
    });
    const described = await kubectl(['describe', 'at', 'ok', '-n', ns]);
    assert.match(described, /EpisodeSucceeded\s+.*episode 1 succeeded/);
    // The pod stays for inspection (retention keeps the last 3).
    assert.equal((await listPods(client, ns, 'ok')).length, 1);
  });

  it('a transient error → a new pod after the backoff, retries + 1, no failure counted', async () => {
    await apply('flaky', fakeClaudeSpec());
    await kubelet.runEpisode(await waitForPod(client, ns, 'flaky-ep-1'), { env: { FAKE_AGENT_MODE: 'transient' } });
    const waiting = await waitForTask(client, ns, 'flaky', (s) => s.lastEpisode?.outcome === 'transient');
    assert.equal(waiting.status?.retries, 1);
    assert.equal(waiting.status?.consecutiveFailures, 0);
    const second = await waitForPod(client, ns, 'flaky-ep-2');
    await waitForTask(client, ns, 'flaky', (s) => s.currentEpisode?.podName === 'flaky-ep-2');
    await kubelet.runEpisode(second, { env: { FAKE_AGENT_MODE: 'success' } });
    const done = await waitForTask(client, ns, 'flaky', (s) => s.phase === 'Succeeded');
    assert.equal(done.status?.episodes, 2);
    assert.equal(done.status?.retries, 1);
  });

  it('three failed episodes in a row → Skipped', async () => {
    await apply(
      'broken',
      fakeClaudeSpec({ limits: { maxEpisodes: 10, maxConsecutiveFailures: 3, episodeTimeoutSeconds: 600 } }),
    );
    for (const n of [1, 2, 3]) {
      await kubelet.runEpisode(await waitForPod(client, ns, `broken-ep-${n}`), { env: { FAKE_AGENT_MODE: 'fail' } });
    }
    const task = await waitForTask(client, ns, 'broken', (s) => s.phase === 'Skipped');
    assert.equal(task.status?.reason, 'ConsecutiveFailures');
    assert.equal(task.status?.consecutiveFailures, 3);
    assert.equal((await listPods(client, ns, 'broken')).length, 3, 'no fourth episode');
  });

  it('the task cost cap → NeedsReview before another episode starts', async () => {
    await apply(
      'pricey',
      fakeClaudeSpec({ limits: { maxEpisodes: 10, maxCostUSD: 0.02, episodeTimeoutSeconds: 600 } }),
    );
    for (const n of [1, 2]) {
      await kubelet.runEpisode(await waitForPod(client, ns, `pricey-ep-${n}`), {
        env: { FAKE_AGENT_MODE: 'continue', FAKE_AGENT_COST_USD: '0.0123' },
      });
    }
    const task = await waitForTask(client, ns, 'pricey', (s) => s.phase === 'NeedsReview');
    assert.equal(task.status?.reason, 'BudgetExceeded');
    assert.equal(task.status?.costUSD, 0.0246);
    assert.equal((await listPods(client, ns, 'pricey')).length, 2);
  });

  it('an invalid spec → Failed/InvalidSpec naming the field; a missing image too', async () => {
    // The CRD schema rejects most mistakes at apply time; the workspace union is only checked by zod.
    await apply('bad', { prompt: 'x', agent: { image: 'i', command: ['a'] }, workspace: { nfs: 'server:/x' } });
    const bad = await waitForTask(client, ns, 'bad', (s) => s.reason === 'InvalidSpec');
    assert.equal(bad.status?.phase, 'Failed');
    assert.match(bad.status?.message, /spec\.workspace/);
    await apply('noimage', { prompt: 'x', agent: { command: ['a'] } });
    const noImage = await waitForTask(client, ns, 'noimage', (s) => s.reason === 'InvalidSpec');
    assert.match(noImage.status?.message, /spec\.agent\.image: required in cluster mode/);
    assert.equal((await listPods(client, ns, 'bad')).length + (await listPods(client, ns, 'noimage')).length, 0);
  });

  it('serves metrics: episodes by outcome, tasks by phase', async () => {
    await controller.idle();
    const text = await waitFor(
      'phase gauge',
      async () => {
        const body = await (await fetch(`${controller.servers[0].url}/metrics`)).text();
        return body.includes(`episodic_tasks{namespace="${ns}",phase="Succeeded"} 2`) ? body : undefined;
      },
      15_000,
    );
    assert.match(text, new RegExp(`episodic_episodes_total\\{namespace="${ns}",outcome="succeeded"\\} 2`));
    assert.match(text, new RegExp(`episodic_episodes_total\\{namespace="${ns}",outcome="transient"\\} 1`));
    assert.match(text, new RegExp(`episodic_episodes_total\\{namespace="${ns}",outcome="failed"\\} 3`));
    assert.match(
      text,
      new RegExp(`episodic_tasks_skipped_total\\{namespace="${ns}",reason="ConsecutiveFailures"\\} 1`),
    );
    assert.match(text, /episodic_watch_restarts_total|# TYPE episodic_watch_restarts_total counter/);
    assert.equal((await fetch(`${controller.servers[0].url}/readyz`)).status, 200);
  });
});

describe('cluster controller: the longest name', { skip, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  const apply = (name: string, spec: Record<string, unknown>) =>
    kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, name, spec) });

  // Records need the AgentEpisode CRD before the controller starts (it checks once); a fresh cluster may not have it yet.
  before(async () => {
    await ensureCluster();
    await kubectl(['apply', '--server-side', '--force-conflicts', '-f', path.join(repoRoot, EPISODE_CRD_FILE)]);
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', `crd/${EPISODE_CRD_NAME}`]);
  });
  withController('ctl-longname', {}, (f) => ({ ns, client, kubelet } = f));

  it('the longest name the CRD accepts (63 characters) runs: its pods and records carry it as a label', async () => {
    const name = `long-${'n'.repeat(58)}`;
    assert.equal(name.length, 63);
    await apply(name, fakeClaudeSpec());
    const running = await waitForTask(client, ns, name, (s) => s.currentEpisode?.podName !== undefined);
    const pod = await waitForPod(client, ns, running.status!.currentEpisode!.podName!); // shortened with a hash to fit
    assert.equal(pod.metadata.labels!['episodic.dev/task'], name);
    const run = await kubelet.runEpisode(pod, { env: { FAKE_AGENT_MODE: 'success' } });
    assert.equal(run.exitCode, 0, run.message);
    await waitForTask(client, ns, name, (s) => s.phase === 'Succeeded');
    // The record is written right after the status that records the episode: wait for it, then read it as a person would.
    const row = new RegExp(`\\s${name}\\s+1\\s+succeeded`);
    await waitFor('the AgentEpisode record', async () =>
      row.test(await kubectl(['get', 'ae', '-n', ns, '-l', `episodic.dev/task=${name}`])),
    );
  });
});
