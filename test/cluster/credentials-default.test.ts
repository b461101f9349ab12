// The namespace default AgentCredentials on a real kube-apiserver (issue 29 §1): the pod of a task without
// spec.agent.credentials gets the gateway URL and a token from the namespace default (no key, no Secret
// reference), its request reaches the model with the real key, and the status says the default chose it;
// `credentials: none` gets no gateway; two defaults hold a task Waiting naming both objects until one goes; a
// controller serving no gateway fails such a task, saying so, rather than run its agent without credentials.
// FakeKubelet plays the node; the request is made as the agent would make it.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import { CREDENTIALS_CONFLICT } from '../../controller/reconciler/credentials-choice.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import { freePort, literalEnv } from '../support/cluster-gateway.ts';
import type { Cluster } from '../support/cluster.ts';
import {
  clusterWithCrd,
  createNamespace,
  fakeClaudeSpec,
  listPods,
  startController,
  testClient,
  waitForPod,
  waitForTask,
} from '../support/kubelet.ts';
import { startModelServer } from '../model-server/server.ts';
import type { ModelServer } from '../model-server/server.ts';

const REAL_KEY = 'sk-ant-cluster-default-key-DO-NOT-LEAK-91c2';
const SCENARIO = 'ok.gw-default';

const apply = (...docs: object[]) =>
  kubectl(['apply', '-f', '-'], { input: docs.map((d) => JSON.stringify(d)).join('\n') });

const credentials = (ns: string, name: string, upstream: string) => ({
  apiVersion: 'episodic.dev/v1alpha1',
  kind: 'AgentCredentials',
  metadata: { name, namespace: ns },
  spec: {
    provider: 'anthropic',
    upstream,
    default: true,
    credentials: [{ name: 'main', secretRef: { name: 'agent-keys', key: 'anthropic' } }],
  },
});

const task = (ns: string, name: string, agent: Record<string, unknown> = {}) => ({
  apiVersion: 'episodic.dev/v1alpha1',
  kind: 'AgentTask',
  metadata: { name, namespace: ns },
  spec: fakeClaudeSpec({ limits: { maxEpisodes: 1, episodeTimeoutSeconds: 600 } }, agent),
});

async function secret(ns: string): Promise<void> {
  const meta = { name: 'agent-keys', namespace: ns };
  await apply({ apiVersion: 'v1', kind: 'Secret', metadata: meta, data: { anthropic: btoa(REAL_KEY) } });
}

describe('cluster controller: the namespace default AgentCredentials', {
  skip: skipCluster,
  timeout: SUITE_HANG_GUARD_MS,
}, () => {
  let cluster: Cluster;
  let client: KubeClient;
  let server: ModelServer;
  const controllers: ClusterController[] = [];

  before(async () => {
    cluster = await clusterWithCrd();
    client = await testClient(cluster);
    server = await startModelServer();
  });
  after(async () => {
    for (const c of controllers) await c.stop();
    client?.close();
    await server?.close();
  });

  it('a task without credentials goes through the default; "none" opts out; two defaults hold a task naming both', async () => {
    const ns = await createNamespace('ctl-cred-default');
    const listen = `127.0.0.1:${await freePort()}`;
    await secret(ns);
    await apply(credentials(ns, 'team', `${server.url}/s/${SCENARIO}`));
    controllers.push(await startController(cluster, { namespace: ns, gateway: { listen } }));

    await apply(task(ns, 'dflt'));
    const pod: any = await waitForPod(client, ns, 'dflt-ep-1');
    const text = JSON.stringify(pod);
    assert.ok(!text.includes(REAL_KEY), 'the key is in the pod');
    assert.doesNotMatch(text, /secretKeyRef|secretRef|agent-keys/, 'a Secret reference is in the pod');
    const env = literalEnv(pod);
    assert.equal(env.ANTHROPIC_BASE_URL, `http://${listen}/t/${ns}/dflt`);
    assert.match(env.ANTHROPIC_API_KEY, /^episodic-gw-[A-Za-z0-9_-]{43}$/);
    const res = await fetch(`${env.ANTHROPIC_BASE_URL}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': env.ANTHROPIC_API_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [] }),
    });
    assert.equal(res.status, 200, await res.text());
    assert.deepEqual(
      server.requestsFor(SCENARIO).map((r) => r.credential),
      [REAL_KEY],
    );
    const running = await waitForTask(client, ns, 'dflt', (s) => s.credentials !== undefined);
    assert.deepEqual(running.status.credentials, { name: 'team', namespaceDefault: true });

    await apply(task(ns, 'optout', { credentials: 'none' }));
    const plain: any = await waitForPod(client, ns, 'optout-ep-1');
    assert.equal(literalEnv(plain).ANTHROPIC_BASE_URL, undefined, 'no gateway for an opted-out task');
    assert.equal(literalEnv(plain).ANTHROPIC_API_KEY, undefined);

    // A second default: a task relying on the default waits, both named; no pick, no pod.
    await apply(credentials(ns, 'other', `${server.url}/s/${SCENARIO}`));
    await apply(task(ns, 'torn'));
    const torn = await waitForTask(client, ns, 'torn', (s) => s.reason === CREDENTIALS_CONFLICT);
    assert.equal(torn.status.phase, 'Waiting');
    assert.match(
      torn.status.message,
      new RegExp(`AgentCredentials ${ns}/other and AgentCredentials ${ns}/team; keep one default`),
    );
    assert.deepEqual(await listPods(client, ns, 'torn'), []);
    // One default again: the informer's delete wakes the task, and it starts through the one left.
    await kubectl(['delete', 'agentcredentials', 'other', '-n', ns, '--wait=false']);
    const freed: any = await waitForPod(client, ns, 'torn-ep-1');
    assert.equal(literalEnv(freed).ANTHROPIC_BASE_URL, `http://${listen}/t/${ns}/torn`);
  });

  it('a controller serving no gateway fails a task on the namespace default, saying so; no pod', async () => {
    const ns = await createNamespace('ctl-cred-nogw');
    await secret(ns);
    await apply(credentials(ns, 'team', `${server.url}/s/${SCENARIO}`));
    controllers.push(await startController(cluster, { namespace: ns }));
    await apply(task(ns, 'needs-gw'));
    const failed = await waitForTask(client, ns, 'needs-gw', (s) => s.lastEpisode?.message !== undefined);
    assert.match(
      failed.status.lastEpisode.message,
      /AgentCredentials team \(spec\.agent\.credentials, or the namespace default\): this controller serves no model gateway/,
    );
    assert.deepEqual(failed.status.credentials, { name: 'team', namespaceDefault: true });
    assert.deepEqual(await listPods(client, ns, 'needs-gw'), []);
  });
});
