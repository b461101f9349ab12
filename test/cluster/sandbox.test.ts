// Issue 30 §3 on the real kube-apiserver (no CNI or runtime here: what is checked is what the controller asks
// for; enforcement is the CNI's and the runtime's): a sandboxed task's pod carries the hardened fields, the
// sandbox's resources and runtimeClassName; its NetworkPolicy exists, selects exactly its pods, denies ingress,
// admits DNS, the gateway's pods and allowCIDRs; deleting the task deletes it; sandbox.enforce refuses a task
// without a sandbox; mounts are the image's paths (handed to the runner), a read-write one is refused.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import { agentTaskManifest, fakeClaudeSpec, waitForPod, waitForTask, withController } from '../support/kubelet.ts';
import { waitFor } from '../support/wait.ts';

const gateway = { namespace: 'episodic-gateway', podLabels: { app: 'model-gateway' }, port: 8080 };
const policyPath = (ns: string, task: string) =>
  `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies/episodic-sandbox-${task}`;

async function policyOf(client: KubeClient, ns: string, task: string): Promise<any> {
  try {
    return await client.get(policyPath(ns, task));
  } catch {
    return undefined;
  }
}

describe('cluster sandbox: pod fields and the task NetworkPolicy', {
  skip: skipCluster,
  timeout: SUITE_HANG_GUARD_MS,
}, () => {
  let ns: string;
  let client: KubeClient;
  const apply = (name: string, spec: Record<string, unknown>) =>
    kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, name, spec) });
  before(() =>
    kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'node.k8s.io/v1',
        kind: 'RuntimeClass',
        metadata: { name: 'gvisor' },
        handler: 'runsc',
      }),
    }),
  );
  withController(
    'ctl-sandbox',
    { episodeDefaults: { sandbox: { runtimeClassName: 'gvisor', gateway } } },
    (f) => ({ ns, client } = f),
  );

  it('a RuntimeClass that does not exist: the API server refuses the pod, the episode fails saying so', async () => {
    await apply('norc', fakeClaudeSpec({ sandbox: { runtimeClassName: 'no-such-runtime' } }));
    const task: any = await waitForTask(client, ns, 'norc', (s) => s.phase === 'Failed');
    assert.match(task.status.message, /RuntimeClass "no-such-runtime" not found/);
  });

  it('the pod: hardened as ever, resources from spec.sandbox.resources, the chart runtime class', async () => {
    await apply(
      'boxed',
      fakeClaudeSpec({ sandbox: { allowCIDRs: ['10.20.0.0/16'], resources: { memoryMiB: 512, cpu: 1.5, pids: 100 } } }),
    );
    const pod: any = await waitForPod(client, ns, 'boxed-ep-1');
    assert.equal(pod.spec.runtimeClassName, 'gvisor');
    assert.equal(pod.spec.automountServiceAccountToken, false);
    assert.equal(pod.spec.securityContext.runAsNonRoot, true);
    assert.equal(pod.spec.securityContext.seccompProfile.type, 'RuntimeDefault');
    const c = pod.spec.containers[0];
    assert.deepEqual(c.resources, {
      requests: { memory: '512Mi', cpu: '1500m' },
      limits: { memory: '512Mi', cpu: '1500m' },
    });
    assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
    assert.deepEqual(
      c.volumeMounts.map((m: any) => m.mountPath).sort(),
      ['/home/episodic', '/tmp', '/workspace'].sort(),
    );
  });

  it('the NetworkPolicy: owned by the task, exactly its pods, no ingress, egress DNS + gateway + allowCIDRs', async () => {
    const task: any = await waitForTask(client, ns, 'boxed', (s) => s.phase === 'Running');
    const policy = await policyOf(client, ns, 'boxed');
    assert.ok(policy, 'the policy exists');
    assert.deepEqual(
      policy.metadata.ownerReferences.map((o: any) => [o.kind, o.name, o.uid, o.controller]),
      [['AgentTask', 'boxed', task.metadata.uid, true]],
    );
    assert.deepEqual(policy.spec.podSelector, {
      matchLabels: { 'episodic.dev/task': 'boxed', 'app.kubernetes.io/managed-by': 'episodic' },
    });
    assert.deepEqual(policy.spec.policyTypes, ['Ingress', 'Egress']);
    assert.equal(policy.spec.ingress, undefined, 'an empty ingress list: nothing admitted');
    const egress = policy.spec.egress;
    assert.equal(egress.length, 3);
    assert.deepEqual(
      egress[0].ports.map((p: any) => `${p.protocol}/${p.port}`),
      ['UDP/53', 'TCP/53'],
    );
    assert.deepEqual(egress[1].to, [
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'episodic-gateway' } },
        podSelector: { matchLabels: { app: 'model-gateway' } },
      },
    ]);
    assert.deepEqual(egress[1].ports, [{ protocol: 'TCP', port: 8080 }]);
    assert.deepEqual(egress[2].to, [{ ipBlock: { cidr: '10.20.0.0/16' } }]);
    // The pod it selects carries those labels; another task's pods do not.
    const pod: any = await client.get(`/api/v1/namespaces/${ns}/pods/boxed-ep-1`);
    for (const [k, v] of Object.entries(policy.spec.podSelector.matchLabels)) assert.equal(pod.metadata.labels[k], v);
  });

  it('network none: DNS only; an unsandboxed task gets no policy', async () => {
    await apply('quiet', fakeClaudeSpec({ sandbox: { network: 'none' } }));
    await apply('plain', fakeClaudeSpec());
    await waitForPod(client, ns, 'quiet-ep-1');
    await waitForPod(client, ns, 'plain-ep-1');
    const quiet = await policyOf(client, ns, 'quiet');
    assert.equal(quiet.spec.egress.length, 1);
    assert.deepEqual(
      quiet.spec.egress[0].ports.map((p: any) => p.port),
      [53, 53],
    );
    assert.equal(await policyOf(client, ns, 'plain'), undefined);
    const plainPod: any = await client.get(`/api/v1/namespaces/${ns}/pods/plain-ep-1`);
    assert.equal(plainPod.spec.runtimeClassName, undefined);
  });

  it("mounts: read-only ones reach the pod's runner (it checks the image has them); a read-write one is refused without a pod", async () => {
    await apply('tools', fakeClaudeSpec({ sandbox: { mounts: [{ path: '/opt/tools' }] } }));
    await apply('shared', fakeClaudeSpec({ sandbox: { mounts: [{ path: '/srv/cache', readOnly: false }] } }));
    const pod: any = await waitForPod(client, ns, 'tools-ep-1');
    const config = JSON.parse(pod.spec.containers[0].env.find((e: any) => e.name === 'EPISODIC_EPISODE_CONFIG').value);
    assert.deepEqual(config.sandboxMounts, ['/opt/tools']);
    assert.ok(!pod.spec.volumes.some((v: any) => v.hostPath), 'never a hostPath');
    const refused: any = await waitForTask(client, ns, 'shared', (s) => s.phase === 'Failed');
    assert.match(refused.status.message, /spec\.sandbox\.mounts\[0\] \(\/srv\/cache\): readOnly: false has no meaning/);
    const pods: any = await client.get(`/api/v1/namespaces/${ns}/pods`);
    assert.ok(!pods.items.some((p: any) => p.metadata.name.startsWith('shared-')), 'no pod for the refused task');
  });

  it('deleting the task deletes its NetworkPolicy', async () => {
    await kubectl(['delete', 'agenttask', 'boxed', '-n', ns, '--wait=false']);
    await waitFor('the policy deleted with its task', async () => (await policyOf(client, ns, 'boxed')) === undefined);
  });
});

describe('cluster sandbox: sandbox.enforce', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  withController(
    'ctl-sandbox-enforce',
    { episodeDefaults: { sandbox: { enforce: true } } },
    (f) => ({ ns, client } = f),
  );

  it('a task without spec.sandbox fails without a pod, saying why; a sandboxed one runs', async () => {
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'open', fakeClaudeSpec()) });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'boxed', fakeClaudeSpec({ sandbox: {} })) });
    const refused: any = await waitForTask(client, ns, 'open', (s) => s.phase === 'Failed');
    assert.match(refused.status.message, /chart sandbox\.enforce/);
    // The two are reconciled independently: 'open' may fail before 'boxed' has its pod.
    await waitForPod(client, ns, 'boxed-ep-1');
    const pods: any = await client.get(`/api/v1/namespaces/${ns}/pods`);
    assert.deepEqual(
      pods.items.map((p: any) => p.metadata.name),
      ['boxed-ep-1'],
    );
  });
});
