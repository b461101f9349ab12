// Issue 30 §3: allowHosts on a cluster go through the CONNECT proxy the controller serves (a NetworkPolicy
// cannot name hosts). On the real kube-apiserver: a sandboxed pod gets HTTPS_PROXY naming the controller's proxy
// with its task's credential, and its NetworkPolicy admits egress to the proxy's pods and port. Then the real
// curl, with the pod's own HTTPS_PROXY, through the controller's real proxy socket: an allow-listed host:port is
// tunnelled, another is refused (403), a forged or missing credential is refused (407), an unsandboxed task's
// credential admits nothing.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import { proxyCredential } from '../../controller/executors/sandbox/connect-rule.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import { agentTaskManifest, fakeClaudeSpec, waitForPod, withController } from '../support/kubelet.ts';

const KEY = Buffer.from('k'.repeat(40));
const PROXY = {
  host: 'episodic-sandbox-proxy.episodic.svc',
  port: 3128,
  namespace: 'episodic',
  podLabels: { app: 'ctl' },
};

/** An HTTP server saying its name: the far end of a tunnel. */
async function target(name: string) {
  const server = createServer((_req, res) => res.end(`hello from ${name}\n`));
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  return { server, port: (server.address() as AddressInfo).port };
}

/** curl through `proxy` (a pod's HTTPS_PROXY, its host swapped for the test's listener) to 127.0.0.1:port. */
function curl(proxy: string, port: number): Promise<{ code: number; out: string }> {
  const args = ['-sS', '--max-time', '10', '--proxytunnel', '-x', proxy, `http://127.0.0.1:${port}/`];
  return new Promise((done) =>
    execFile('curl', args, (err, stdout, stderr) =>
      done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    ),
  );
}

describe('cluster sandbox: allowHosts through the controller proxy', {
  skip: skipCluster,
  timeout: SUITE_HANG_GUARD_MS,
}, () => {
  let ns: string;
  let client: KubeClient;
  let controller: ClusterController;
  let allowed: Awaited<ReturnType<typeof target>>;
  let other: Awaited<ReturnType<typeof target>>;
  before(async () => {
    allowed = await target('allowed');
    other = await target('other');
  });
  after(() => {
    allowed.server.close();
    other.server.close();
  });
  withController(
    'ctl-sandbox-proxy',
    { episodeDefaults: { sandbox: { proxy: PROXY } }, sandboxProxy: { listen: '127.0.0.1:0', key: KEY } },
    (f) => ({ ns, client, controller } = f),
  );
  const podEnv = async (name: string) => {
    const pod: any = await waitForPod(client, ns, `${name}-ep-1`);
    return Object.fromEntries(pod.spec.containers[0].env.map((e: any) => [e.name, e.value]));
  };
  /** The pod's proxy URL, aimed at where the controller listens here (the Service would route it). */
  const local = (url: string) =>
    url.replace(`${PROXY.host}:${PROXY.port}`, `127.0.0.1:${controller.sandboxProxy?.port}`);

  it('the pod dials the proxy with its task credential; its policy admits the proxy pods and port', async () => {
    const spec = fakeClaudeSpec({ sandbox: { allowHosts: [`127.0.0.1:${allowed.port}`] } });
    spec.agent = { ...(spec.agent as object), env: [{ name: 'HTTPS_PROXY', value: 'http://bypass:1' }] };
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'boxed', spec) });
    const env = await podEnv('boxed');
    const url = new URL(env.HTTPS_PROXY);
    assert.equal(`${url.hostname}:${url.port}`, `${PROXY.host}:${PROXY.port}`, "the task's own HTTPS_PROXY lost");
    assert.equal(decodeURIComponent(url.username), `${ns}.boxed`);
    assert.equal(url.password, proxyCredential(KEY, { namespace: ns, name: 'boxed' }));
    assert.equal(env.HTTP_PROXY, env.HTTPS_PROXY);
    assert.equal(env.https_proxy, env.HTTPS_PROXY);
    assert.match(env.NO_PROXY, /(^|,)\.svc(,|$)/);
    const policy: any = await client.get(
      `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies/episodic-sandbox-boxed`,
    );
    assert.deepEqual(
      policy.spec.egress.find((e: any) => e.ports?.[0]?.port === PROXY.port),
      {
        to: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'episodic' } },
            podSelector: { matchLabels: { app: 'ctl' } },
          },
        ],
        ports: [{ protocol: 'TCP', port: 3128 }],
      },
    );
  });

  it("the controller's proxy tunnels to an allowHost only, for the credential's own task", async () => {
    const proxy = local((await podEnv('boxed')).HTTPS_PROXY);
    const through = await curl(proxy, allowed.port);
    assert.equal(through.code, 0, through.out);
    assert.equal(through.out, 'hello from allowed\n');
    const refused = await curl(proxy, other.port);
    assert.notEqual(refused.code, 0);
    assert.match(refused.out, /403/);
    assert.doesNotMatch(refused.out, /hello/);
    const forged = await curl(proxy.replace(/:[^:@]+@/, ':forged@'), allowed.port);
    assert.match(forged.out, /407/);
    const anonymous = await curl(`http://127.0.0.1:${controller.sandboxProxy?.port}`, allowed.port);
    assert.match(anonymous.out, /407/);
  });

  it('an unsandboxed task gets no proxy variables, and its (forged-by-key) credential admits nothing', async () => {
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'plain', fakeClaudeSpec()) });
    const env = await podEnv('plain');
    assert.equal(env.HTTPS_PROXY, undefined);
    const plain = `http://${ns}.plain:${proxyCredential(KEY, { namespace: ns, name: 'plain' })}@127.0.0.1:${controller.sandboxProxy?.port}`;
    const refused = await curl(plain, allowed.port);
    assert.match(refused.out, /403/);
  });
});
