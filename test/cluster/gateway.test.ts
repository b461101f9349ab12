// The model gateway on a real kube-apiserver: the controller reads the AgentCredentials and its Secret itself,
// the episode pod holds only the gateway URL and its token (no Secret reference, no key), a request with that
// token reaches the model server with the real key, a restarted controller re-grants the running pod's token,
// and the token dies with the pod. FakeKubelet plays the node; the request is made as the agent would make it.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import { GATEWAY_TOKEN_ANNOTATION } from '../../controller/executors/cluster/gateway-binding.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import { freePort, ask, literalEnv } from '../support/cluster-gateway.ts';
import type { Cluster } from '../support/cluster.ts';
import {
  FakeKubelet,
  clusterWithCrd,
  createNamespace,
  fakeClaudeSpec,
  listPods,
  startController,
  testClient,
  waitForPod,
  waitForTask,
} from '../support/kubelet.ts';
import { waitFor } from '../support/wait.ts';
import { startModelServer } from '../model-server/server.ts';
import type { ModelServer } from '../model-server/server.ts';

const REAL_KEY = 'sk-ant-cluster-real-key-DO-NOT-LEAK-7f3e';
const PRICE = { inputPerMTok: 3, outputPerMTok: 20, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };
const SCENARIO = 'ok.gw-cluster';

describe('cluster controller: the model gateway', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let cluster: Cluster;
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  let controller: ClusterController | undefined;
  let server: ModelServer;
  let listen: string;
  const start = async () => {
    controller = await startController(cluster, { namespace: ns, gateway: { listen } });
  };

  before(async () => {
    cluster = await clusterWithCrd();
    ns = await createNamespace('ctl-gateway');
    client = await testClient(cluster);
    kubelet = new FakeKubelet(client);
    server = await startModelServer();
    listen = `127.0.0.1:${await freePort()}`;
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'agent-keys', namespace: ns } };
    await kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({ ...secret, data: { anthropic: Buffer.from(REAL_KEY).toString('base64') } }),
    });
    const credentials = (name: string, secretName: string) => ({
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentCredentials',
      metadata: { name, namespace: ns },
      spec: {
        provider: 'anthropic',
        upstream: `${server.url}/s/${SCENARIO}`,
        credentials: [{ name: 'main', secretRef: { name: secretName, key: 'anthropic' } }],
        pricing: { '*': PRICE },
      },
    });
    const docs = [credentials('claude', 'agent-keys'), credentials('nokey', 'missing-keys')];
    await kubectl(['apply', '-f', '-'], { input: docs.map((d) => JSON.stringify(d)).join('\n') });
    await start();
  });
  after(async () => {
    await controller?.stop();
    client?.close();
    await server?.close();
  });

  const task = (name: string, credentials: string, limits: Record<string, unknown> = {}) =>
    kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'episodic.dev/v1alpha1',
        kind: 'AgentTask',
        metadata: { name, namespace: ns },
        spec: fakeClaudeSpec(
          { limits: { maxEpisodes: 1, episodeTimeoutSeconds: 600, ...limits } },
          {
            credentials,
            // What a task may still say: behind the gateway it is dropped, never put in the pod.
            env: [{ name: 'ANTHROPIC_API_KEY', valueFrom: { secretKeyRef: { name: 'agent-keys', key: 'anthropic' } } }],
          },
        ),
      }),
    });

  it('the pod holds only the URL and a token; the request reaches the model with the real key; a restart re-grants; the token dies with the pod', async () => {
    await task('gw', 'claude');
    const pod: any = await waitForPod(client, ns, 'gw-ep-1');
    const text = JSON.stringify(pod);
    assert.ok(!text.includes(REAL_KEY), 'the key is in the pod');
    assert.doesNotMatch(text, /secretKeyRef|secretRef|agent-keys/, 'a Secret reference is in the pod');
    assert.equal(pod.spec.containers[0].envFrom, undefined);
    const env = literalEnv(pod);
    assert.equal(env.ANTHROPIC_BASE_URL, `http://${listen}/t/${ns}/gw`);
    assert.match(env.ANTHROPIC_API_KEY, /^episodic-gw-[A-Za-z0-9_-]{43}$/);
    assert.equal(
      pod.metadata.annotations[GATEWAY_TOKEN_ANNOTATION],
      createHash('sha256').update(env.ANTHROPIC_API_KEY).digest('base64url'),
    );
    const running = await kubelet.setRunning(pod);

    const first = await ask(env);
    assert.equal(first.status, 200, first.body);
    assert.match(first.body, /event: message_stop/);
    assert.deepEqual(
      server.requestsFor(SCENARIO).map((r) => r.credential),
      [REAL_KEY],
      'the model server saw the real key, once',
    );

    // A restart loses the tokens in memory; the pod's annotation lets the new leader take its token back.
    await controller?.stop();
    controller = undefined;
    assert.notEqual((await ask(env).catch(() => ({ status: 0 }))).status, 200, 'the old gateway is gone');
    await start();
    const again = await waitFor('the token re-granted', async () => {
      const answer = await ask(env).catch(() => undefined);
      return answer?.status === 200 ? answer : undefined;
    });
    assert.match(again.body, /event: message_stop/);
    assert.equal(server.requestsFor(SCENARIO).length, 2);

    await kubelet.terminate(running, { exitCode: 0, message: 'done' });
    const ended = await waitForTask(client, ns, 'gw', (s) => s.lastEpisode?.number === 1 && !s.currentEpisode);
    // Metered at the wire by the new leader (its one request: 1234 in, 56 out, 200 cache read, 100 cache write).
    assert.equal(ended.status.costUSD, 0.005257);
    const dead = await ask(env);
    assert.equal(dead.status, 401, dead.body);
    assert.match(dead.body, /unknown or expired token/);
    assert.equal(server.requestsFor(SCENARIO).length, 2, 'nothing forwarded on a dead token');
  });

  it('the hard stop: once maxCostUSD is spent the gateway refuses, forwards nothing, and the pod goes (BudgetExceeded)', async () => {
    await task('gw-cap', 'claude', { maxCostUSD: 0.001 });
    const pod: any = await waitForPod(client, ns, 'gw-cap-ep-1');
    await kubelet.setRunning(pod);
    const env = literalEnv(pod);
    const before = server.requestsFor(SCENARIO).length;
    assert.equal((await ask(env)).status, 200, 'nothing spent yet: forwarded');
    const refused = await ask(env);
    assert.notEqual(refused.status, 200);
    assert.match(refused.body, /maxCostUSD/);
    assert.equal(server.requestsFor(SCENARIO).length, before + 1, 'the refused request was not forwarded');
    // The agent did not stop by itself: a second later the controller deletes its pod.
    const stopped = await waitForTask(client, ns, 'gw-cap', (s) => s.reason === 'BudgetExceeded');
    assert.equal(stopped.status.costUSD, 0.005257);
    assert.match(stopped.status.lastEpisode.message ?? '', /stopped at the gateway: .*maxCostUSD/);
    await waitFor('the pod deleted', async () =>
      (await listPods(client, ns, 'gw-cap')).length === 0 ? true : undefined,
    );
  });

  it('a credential whose Secret is missing: no pod, and the status names the Secret', async () => {
    await task('gw-nokey', 'nokey');
    const failed = await waitForTask(client, ns, 'gw-nokey', (s) => /missing-keys/.test(s.lastEpisode?.message ?? ''));
    assert.match(
      failed.status.lastEpisode.message,
      new RegExp(
        `AgentCredentials ${ns}/nokey: spec.credentials\\[0\\].secretRef: Secret ${ns}/missing-keys does not exist`,
      ),
    );
    assert.deepEqual(await listPods(client, ns, 'gw-nokey'), []);
  });
});
