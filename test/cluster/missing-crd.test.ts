// A controller started before its CRD exists, on the real apiserver. The shared apiserver has the real
// AgentTask CRD (other tests use it), so this controller looks for AgentTasks in a throwaway API group that
// has none: the apiserver answers exactly as for a missing CRD ("404 page not found"). The test then
// installs the CRD in that group (the generated one, renamed) and the waiting controller starts.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import { agentTaskCrd } from '../../controller/api/crd.ts';
import { ClusterController } from '../../controller/cluster/controller.ts';
import { clusterWithCrd, createNamespace, loadTestKubeConfig } from '../support/kubelet.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import { waitFor } from '../support/wait.ts';

describe('controller started before the AgentTask CRD', { skip: skipCluster }, () => {
  const group = `t${Date.now().toString(36)}${randomBytes(2).toString('hex')}.episodic-test.dev`;
  const crdName = `agenttasks.${group}`;
  let controller: ClusterController | undefined;
  after(async () => {
    await controller?.stop();
    await kubectl(['delete', 'crd', crdName, '--ignore-not-found', '--wait=false']);
  });

  it('says which CRD is missing and how to install it, once, and starts when it appears', {
    timeout: SUITE_HANG_GUARD_MS,
  }, async () => {
    const cluster = await clusterWithCrd();
    const ns = await createNamespace('nocrd');
    const lines: Array<{ level: number; msg: string; err?: unknown }> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        done();
      },
    });
    controller = await ClusterController.start({
      kubeConfig: loadTestKubeConfig(cluster.kubeconfigPath),
      log: pino({ level: 'info' }, sink),
      namespace: ns,
      qps: 0,
      taskGroup: group,
    });
    const said = await waitFor('the missing CRD said', () =>
      lines.find((l) => l.msg.includes(crdName) && l.msg.includes('is not installed')),
    );
    assert.equal(
      said.msg,
      `CRD ${crdName} is not installed; install it with \`kubectl apply -f crds/\` (or \`episodic crd | kubectl apply -f -\`; \`helm install\` installs it). Waiting for it`,
    );
    assert.equal(said.level, 50, 'an error');
    await waitFor('a few retries', () =>
      controller!.metrics.watchRestarts.get().then((m) => m.values.reduce((n, v) => n + v.value, 0) >= 3),
    );
    assert.equal(
      lines.filter((l) => l.msg.includes(crdName) && l.msg.includes('is not installed')).length,
      1,
      'said once, not per retry',
    );
    assert.ok(!lines.some((l) => JSON.stringify(l).includes('404 page not found')), 'not the bare 404');
    assert.equal(controller.ready(), false, '/readyz is false meanwhile');

    const crd = agentTaskCrd() as { metadata: { name: string }; spec: { group: string } };
    crd.metadata.name = crdName;
    crd.spec.group = group;
    await kubectl(['apply', '-f', '-'], { input: JSON.stringify(crd) });
    await waitFor('the controller synced', () => controller!.tasks.hasSynced(), 60_000);
    await waitFor('said it starts', () => lines.some((l) => l.msg === `CRD ${crdName} is installed now; starting`));
    await waitFor('ready', () => controller!.ready());
  });
});
