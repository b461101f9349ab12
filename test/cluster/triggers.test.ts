// AgentTriggers on the real kube-apiserver, with the real Gitea: a schedule's missed tick and a labelled
// issue each become one AgentTask owned by its trigger (ownerReference + label), the Gitea token read from a
// Secret; a controller restart creates nothing twice; the token appears in no status.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import { type Gitea, startGitea } from '../support/gitea.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import type { Cluster } from '../support/cluster.ts';
import { clusterWithCrd, createNamespace, fakeClaudeSpec, startController } from '../support/kubelet.ts';
import { waitFor } from '../support/wait.ts';

const TRIGGER_CRD = path.join(import.meta.dirname, '..', '..', 'crds', 'episodic.dev_agenttriggers.yaml');
const TICK = new Date('2026-01-01T02:00:00Z'); // 03:00 in Berlin
const TICK_TASK = `yearly-${TICK.getTime() / 60_000}`;

interface Obj {
  metadata: {
    name: string;
    uid: string;
    labels?: Record<string, string>;
    ownerReferences?: Array<{ kind: string; name: string; uid: string }>;
  };
  spec: { prompt?: string };
  status?: Record<string, unknown>;
}

describe('AgentTriggers on a real apiserver', { skip: skipCluster, timeout: 180_000 }, () => {
  let cluster: Cluster;
  let gitea: Gitea;
  let ns: string;
  let controller: ClusterController | undefined;
  const apply = (doc: object) => kubectl(['apply', '-f', '-'], { input: JSON.stringify(doc) });
  const get = async (kind: string, name: string): Promise<Obj> =>
    JSON.parse(await kubectl(['get', kind, name, '-n', ns, '-o', 'json']));
  const tasks = async () =>
    (JSON.parse(await kubectl(['get', 'agenttasks', '-n', ns, '-o', 'json'])) as { items: Obj[] }).items
      .map((t) => t.metadata.name)
      .sort();

  before(
    async () => {
      cluster = await clusterWithCrd();
      await kubectl(['apply', '--server-side', '--force-conflicts', '-f', TRIGGER_CRD]);
      await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/agenttriggers.episodic.dev']);
      ns = await createNamespace('triggers');
      gitea = await startGitea();
      const alice = await gitea.createUser('alice');
      await gitea.createRepo('episodic-admin', 'widgets');
      await gitea.addCollaborator('episodic-admin', 'widgets', 'alice', 'write');
      const label = await gitea.createLabel('episodic-admin', 'widgets', 'agent');
      await gitea.createIssue(
        'episodic-admin',
        'widgets',
        { title: 'Crash', body: 'boom', labels: [label.id] },
        alice.token,
      );
      await gitea.createIssue('episodic-admin', 'widgets', { title: 'Other', body: 'no label' }, alice.token);
      // Through stdin: the token never in argv.
      await apply({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'gitea', namespace: ns },
        stringData: { token: gitea.adminToken },
      });
      const template = { spec: { ...fakeClaudeSpec(), prompt: 'Fix #{{item.number}}: {{item.title}} {{tick}}' } };
      const trigger = (name: string, source: object) =>
        apply({
          apiVersion: 'episodic.dev/v1alpha1',
          kind: 'AgentTrigger',
          metadata: { name, namespace: ns },
          spec: { source, template },
        });
      await trigger('yearly', { schedule: { cron: '0 3 1 1 *', timeZone: 'Europe/Berlin' } });
      // Last handled before the 2026 tick, as if the controller had been down since.
      await kubectl([
        'patch',
        'agenttrigger',
        'yearly',
        '-n',
        ns,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: { lastTick: '2025-06-01T00:00:00.000Z' } }),
      ]);
      await trigger('fix', {
        gitea: {
          apiURL: gitea.url,
          repo: 'episodic-admin/widgets',
          labels: ['agent'],
          tokenSecretRef: { name: 'gitea', key: 'token' },
        },
      });
    },
    { timeout: 30 * 60_000 },
  );
  after(async () => {
    await controller?.stop();
    await gitea?.stop();
  });

  it('a missed tick and a labelled issue each become one AgentTask owned by its trigger', async () => {
    controller = await startController(cluster, { namespace: ns });
    await waitFor('the two tasks', async () => (await tasks()).length === 2 && tasks(), 60_000);
    assert.deepEqual(await tasks(), ['fix-1', TICK_TASK].sort());
    for (const [task, trigger] of [
      ['fix-1', 'fix'],
      [TICK_TASK, 'yearly'],
    ]) {
      const owner = await get('agenttrigger', trigger);
      const t = await get('agenttask', task);
      assert.equal(t.metadata.labels?.['episodic.dev/trigger'], trigger);
      assert.deepEqual(
        t.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.uid]),
        [['AgentTrigger', trigger, owner.metadata.uid]],
      );
    }
    assert.equal((await get('agenttask', 'fix-1')).spec.prompt, 'Fix #1: Crash {{tick}}');
    assert.equal(
      (await get('agenttask', TICK_TASK)).spec.prompt,
      `Fix #{{item.number}}: {{item.title}} ${TICK.toISOString()}`,
    );
    const fix = await waitFor('fix status', async () => {
      const s = (await get('agenttrigger', 'fix')).status;
      return s?.tasksCreated === 1 && s;
    });
    assert.equal(fix.itemsSeen, 2);
    assert.ok(!JSON.stringify(fix).includes(gitea.adminToken), 'the token is not in status');
    const yearly = await waitFor(
      'yearly status',
      async () => (await get('agenttrigger', 'yearly')).status?.lastTick === TICK.toISOString(),
    );
    assert.ok(yearly);
  });

  it('a restarted controller polls again and creates nothing twice', async () => {
    const before = (await get('agenttrigger', 'fix')).status?.lastPollAt;
    await controller?.stop();
    controller = await startController(cluster, { namespace: ns });
    // A poll that went through (another suite's CRD apply can make the apiserver answer 429 for a moment).
    await waitFor(
      'a new poll without an error',
      async () => {
        const s = (await get('agenttrigger', 'fix')).status;
        return s?.lastPollAt !== before && s?.lastError === undefined;
      },
      60_000,
    );
    await controller.idle();
    assert.deepEqual(await tasks(), ['fix-1', TICK_TASK].sort());
  });
});
