// A pool wholly paused on a real kube-apiserver, then a credential added to its AgentCredentials: the tasks it
// held (CredentialsExhausted, no pod) get their pods at once, hours before the reset, on the controller's
// clock that does not move; the pod holds only the gateway URL and a token, and that token's requests go out on
// the new credential. FakeKubelet plays the node; requests are made as the agent would make them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import { ManualClock } from '../../controller/core/clock.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { CREDENTIALS_EXHAUSTED } from '../../controller/reconciler/credentials-hold.ts';
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
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import { waitFor } from '../support/wait.ts';
import { startModelServer } from '../model-server/server.ts';
import type { ModelServer } from '../model-server/server.ts';

const KEY_A = 'sk-ant-cluster-added-A-DO-NOT-LEAK-3333';
const KEY_B = 'sk-ant-cluster-added-B-DO-NOT-LEAK-4444';
const SCENARIO = 'ok.gw-pool-added';

describe('cluster controller: a credential added to a wholly paused pool', {
  skip: skipCluster,
  timeout: SUITE_HANG_GUARD_MS,
}, () => {
  let cluster: Cluster;
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  let controller: ClusterController | undefined;
  let server: ModelServer;
  let gatewayUrl: string;
  // The clock never reaches the reset: only the added credential can free the held task.
  const clock = new ManualClock(new Date('2026-06-01T12:00:00Z'));
  const credential = (name: string, key: string) => ({ name, secretRef: { name: 'added-keys', key } });
  const credentials = (members: unknown[]) => ({
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentCredentials',
    metadata: { name: 'pool', namespace: ns },
    spec: { provider: 'anthropic', upstream: `${server.url}/s/${SCENARIO}`, credentials: members },
  });
  const task = (name: string) =>
    kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'episodic.dev/v1alpha1',
        kind: 'AgentTask',
        metadata: { name, namespace: ns },
        spec: fakeClaudeSpec({ limits: { maxEpisodes: 1, episodeTimeoutSeconds: 36_000 } }, { credentials: 'pool' }),
      }),
    });
  const credentialsStatus = async () =>
    JSON.parse(await kubectl(['get', 'agentcredentials', 'pool', '-n', ns, '-o', 'json'])).status;

  before(async () => {
    cluster = await clusterWithCrd();
    ns = await createNamespace('ctl-gw-pool-added');
    client = await testClient(cluster);
    kubelet = new FakeKubelet(client);
    server = await startModelServer({ now: () => Math.floor(clock.now().getTime() / 1000) });
    const listen = `127.0.0.1:${await freePort()}`;
    gatewayUrl = `http://${listen}`;
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'added-keys', namespace: ns },
      data: { a: b64(KEY_A), b: b64(KEY_B) },
    };
    const pool = credentials([credential('key-a', 'a')]);
    await kubectl(['apply', '-f', '-'], { input: [secret, pool].map((d) => JSON.stringify(d)).join('\n') });
    controller = await startController(cluster, { namespace: ns, gateway: { listen }, clock });
  });
  after(async () => {
    await controller?.stop();
    client?.close();
    await server?.close();
  });

  it('the held task gets its pod at once, the gateway URL and a token in its env, its requests on the new credential', async () => {
    server.keyScenarios.set(KEY_A, 'usage');
    await task('first');
    const pod: any = await waitForPod(client, ns, 'first-ep-1');
    const running = await kubelet.setRunning(pod);
    assert.equal((await ask(literalEnv(pod))).status, 429);
    const reset = new Date(clock.now().getTime() + 2 * 3_600_000).toISOString();
    await waitFor('key-a paused on the apiserver', async () => {
      const s = await credentialsStatus();
      return s?.credentials?.[0]?.pausedUntil === reset ? s : undefined;
    });
    await kubelet.terminate(running, { exitCode: 1, message: 'usage limit' });
    await waitForTask(client, ns, 'first', (s) => s.lastEpisode?.number === 1 && !s.currentEpisode);

    await task('held');
    const held = await waitForTask(client, ns, 'held', (s) => s.reason === CREDENTIALS_EXHAUSTED);
    assert.equal(held.status.phase, 'Waiting');
    assert.deepEqual(await listPods(client, ns, 'held'), [], 'no pod into a known limit');

    // The AgentCredentials edited: a second credential, not paused. The clock stays two hours before the reset.
    await kubectl(['apply', '-f', '-'], {
      input: JSON.stringify(credentials([credential('key-a', 'a'), credential('key-b', 'b')])),
    });
    const freed: any = await waitForPod(client, ns, 'held-ep-1');
    assert.ok(clock.now().getTime() < Date.parse(reset), 'the reset has not come');

    const env = freed.spec.containers[0].env as Array<{ name: string; value?: string; valueFrom?: unknown }>;
    assert.deepEqual(
      env.filter((e) => e.valueFrom !== undefined).map((e) => e.name),
      [],
      'no Secret reference in the pod',
    );
    const literal = literalEnv(freed);
    assert.ok(literal.ANTHROPIC_BASE_URL.startsWith(`${gatewayUrl}/t/${ns}/held`), literal.ANTHROPIC_BASE_URL);
    assert.match(literal.ANTHROPIC_API_KEY, /^[A-Za-z0-9_-]{40,}$/);
    assert.ok(!JSON.stringify(freed).includes('DO-NOT-LEAK'), 'a key is in the pod');

    await kubelet.setRunning(freed);
    const answer = await ask(literal);
    assert.equal(answer.status, 200, answer.body);
    assert.deepEqual(
      server.requestsFor(SCENARIO).map((r) => [r.credential, r.status]),
      [
        [KEY_A, 429],
        [KEY_B, 'stream'],
      ],
    );
  });
});
