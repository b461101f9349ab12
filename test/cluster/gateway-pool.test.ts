// A pool of two credentials on a real kube-apiserver, behind the gateway the leader serves: a 429 on one
// credential fails over to the other within the same request; a usage limit on both pauses them in
// AgentCredentials.status (the status subresource; names, never a key), the next tasks wait CredentialsExhausted
// with no pod created, a restarted controller keeps the pause from that status, and with the injected clock
// past the reset the held tasks get their pods. FakeKubelet plays the node; requests are made as the agent would.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import { ManualClock } from '../../controller/core/clock.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { CREDENTIALS_EXHAUSTED, CREDENTIALS_RESUME_JITTER_MS } from '../../controller/reconciler/credentials-hold.ts';
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

const KEY_A = 'sk-ant-cluster-pool-A-DO-NOT-LEAK-1111';
const KEY_B = 'sk-ant-cluster-pool-B-DO-NOT-LEAK-2222';
const SCENARIO = 'ok.gw-pool';

describe('cluster controller: a pool of credentials behind the gateway', {
  skip: skipCluster,
  timeout: SUITE_HANG_GUARD_MS,
}, () => {
  let cluster: Cluster;
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  let controller: ClusterController | undefined;
  let server: ModelServer;
  let listen: string;
  const clock = new ManualClock(new Date('2026-06-01T12:00:00Z'));
  const start = async () => {
    controller = await startController(cluster, { namespace: ns, gateway: { listen }, clock });
  };
  const credentialsStatus = async () =>
    JSON.parse(await kubectl(['get', 'agentcredentials', 'pool', '-n', ns, '-o', 'json'])).status;

  before(async () => {
    cluster = await clusterWithCrd();
    ns = await createNamespace('ctl-gw-pool');
    client = await testClient(cluster);
    kubelet = new FakeKubelet(client);
    server = await startModelServer({ now: () => Math.floor(clock.now().getTime() / 1000) });
    listen = `127.0.0.1:${await freePort()}`;
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'pool-keys', namespace: ns },
      data: { a: b64(KEY_A), b: b64(KEY_B) },
    };
    const credentials = {
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentCredentials',
      metadata: { name: 'pool', namespace: ns },
      spec: {
        provider: 'anthropic',
        upstream: `${server.url}/s/${SCENARIO}`,
        credentials: [
          { name: 'key-a', secretRef: { name: 'pool-keys', key: 'a' } },
          { name: 'key-b', secretRef: { name: 'pool-keys', key: 'b' } },
        ],
      },
    };
    await kubectl(['apply', '-f', '-'], { input: [secret, credentials].map((d) => JSON.stringify(d)).join('\n') });
    await start();
  });
  after(async () => {
    await controller?.stop();
    client?.close();
    await server?.close();
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
  const keysSeen = () => server.requestsFor(SCENARIO).map((r) => [r.credential, r.status]);

  it('a 429 on one credential: the same request succeeds on the other', async () => {
    server.keyScenarios.set(KEY_A, 'ratelimit');
    await task('rl');
    const pod: any = await waitForPod(client, ns, 'rl-ep-1');
    assert.ok(!JSON.stringify(pod).includes(KEY_A) && !JSON.stringify(pod).includes(KEY_B), 'a key is in the pod');
    const running = await kubelet.setRunning(pod);
    const answer = await ask(literalEnv(pod));
    assert.equal(answer.status, 200, answer.body);
    assert.match(answer.body, /event: message_stop/);
    assert.deepEqual(keysSeen(), [
      [KEY_A, 429],
      [KEY_B, 'stream'],
    ]);
    await kubelet.terminate(running, { exitCode: 0, message: 'done' });
    await waitForTask(client, ns, 'rl', (s) => s.lastEpisode?.number === 1 && !s.currentEpisode);
    // The counters reach the status too (coalesced), by name only.
    const status = await waitFor('the counters in the status', async () => {
      const s = await credentialsStatus();
      return s?.credentials?.find((c: any) => c.name === 'key-b')?.requests === 1 ? s : undefined;
    });
    assert.equal(status.credentials.find((c: any) => c.name === 'key-a').requests, 1);
    assert.ok(!JSON.stringify(status).includes('DO-NOT-LEAK'), 'a key is in the status');
  });

  it('a usage limit on both: paused in AgentCredentials.status, tasks held with no pod, kept across a restart, started after the reset', async () => {
    clock.advance(120_000);
    server.keyScenarios.set(KEY_A, 'usage');
    server.keyScenarios.set(KEY_B, 'usage');
    await task('ul');
    const pod: any = await waitForPod(client, ns, 'ul-ep-1');
    const running = await kubelet.setRunning(pod);
    const limited = await ask(literalEnv(pod));
    assert.equal(limited.status, 429, limited.body);
    const reset = new Date(clock.now().getTime() + 2 * 3_600_000).toISOString();
    const status = await waitFor('both paused on the apiserver', async () => {
      const s = await credentialsStatus();
      return s?.credentials?.every((c: any) => c.state === 'Paused') ? s : undefined;
    });
    for (const c of status.credentials) {
      assert.equal(c.pausedUntil, reset, c.name);
      assert.match(c.lastError, /429 rate_limit_error/);
    }
    assert.ok(!JSON.stringify(status).includes('DO-NOT-LEAK'), 'a key is in the status');
    await kubelet.terminate(running, { exitCode: 1, message: 'usage limit' });
    await waitForTask(client, ns, 'ul', (s) => s.lastEpisode?.number === 1 && !s.currentEpisode);

    const asked = server.requests.length;
    await task('held');
    const held = await waitForTask(client, ns, 'held', (s) => s.reason === CREDENTIALS_EXHAUSTED);
    assert.equal(held.status.phase, 'Waiting');
    assert.match(held.status.message, new RegExp(`earliest reset is ${reset.replace(/[.]/g, '\\.')}`));

    // A new controller reads the pause back from the status: a task new to it is held too.
    await controller?.stop();
    controller = undefined;
    await start();
    await task('after-restart');
    await waitForTask(client, ns, 'after-restart', (s) => s.reason === CREDENTIALS_EXHAUSTED);
    assert.deepEqual(await listPods(client, ns, 'held'), [], 'no pod into a known limit');
    assert.deepEqual(await listPods(client, ns, 'after-restart'), [], 'no pod into a known limit');
    assert.equal(server.requests.length, asked, 'nothing sent upstream');

    // Past the reset (and its jitter) both start: their pods are created.
    server.keyScenarios.clear();
    clock.advance(Date.parse(reset) - clock.now().getTime() + CREDENTIALS_RESUME_JITTER_MS + 1000);
    await waitForPod(client, ns, 'held-ep-1');
    await waitForPod(client, ns, 'after-restart-ep-1');
  });
});
