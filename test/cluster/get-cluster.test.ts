// `episodic get --kubeconfig`: the local get's tables from a real apiserver's AgentTasks and AgentEpisodes —
// PARENT, -o wide's TRIGGER and STARTED, --episodes' DURATION, GATES, OPS and STEP columns, one task's merge queue.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { kubectl, skipCluster } from '../support/cluster.ts';
import type { Cluster } from '../support/cluster.ts';
import { clusterWithCrd, createNamespace } from '../support/kubelet.ts';
import { runCli } from '../support/local.ts';

const task = (ns: string, name: string, labels: Record<string, string>) =>
  JSON.stringify({
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentTask',
    metadata: { name, namespace: ns, labels },
    spec: {
      agent: { command: ['claude'] },
      steps: [{ name: 'build', prompt: 'build it', gates: [{ name: 'test', check: ['true'] }] }],
    },
  });

const episode = (ns: string, record: Record<string, unknown>) =>
  JSON.stringify({
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentEpisode',
    metadata: {
      name: `${record.task}-ep-${record.number}`,
      namespace: ns,
      labels: { 'episodic.dev/task': String(record.task), 'episodic.dev/episode': String(record.number) },
    },
    record,
  });

describe('episodic get --kubeconfig', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let cluster: Cluster;
  let ns: string;
  before(async () => {
    cluster = await clusterWithCrd();
    ns = await createNamespace('get-cli');
    await kubectl(['apply', '-f', '-'], { input: task(ns, 'boss', {}) });
    const labels = { 'episodic.dev/parent': 'boss', 'episodic.dev/trigger': 'nightly' };
    await kubectl(['apply', '-f', '-'], { input: task(ns, 'boss-child', labels) });
    const status = {
      status: {
        phase: 'Running',
        episodes: 2,
        costUSD: 0.5,
        step: { index: 1, name: 'build', summary: '1/1 build' },
        integrate: {
          queue: 'q',
          result: 'needsReview',
          attempts: 1,
          episodes: 0,
          pullRequest: 4,
          forge: 'gitea -> 405',
        },
      },
    };
    await kubectl([
      'patch',
      'at',
      'boss-child',
      '-n',
      ns,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify(status),
    ]);
    const base = { task: 'boss-child', exitCode: 0, costUSD: 0.25, step: 'build' };
    await kubectl(['apply', '-f', '-'], {
      input: episode(ns, {
        ...base,
        number: 1,
        outcome: 'continue',
        startedAt: '2026-12-01T18:44:00.000Z',
        finishedAt: '2026-12-01T18:45:05.500Z',
        gates: [{ name: 'test', exitCode: 1 }],
        ops: ['set plan', 'spawn helper'],
        opsRejected: 'line 3: unknown op "rm"',
      }),
    });
    await kubectl(['apply', '-f', '-'], {
      input: episode(ns, {
        ...base,
        number: 2,
        outcome: 'succeeded',
        startedAt: '2026-12-01T18:46:00.000Z',
        finishedAt: '2026-12-01T18:46:02.400Z',
        gates: [{ name: 'test', exitCode: 0 }],
      }),
    });
  });

  const get = (...args: string[]) => runCli(['get', ...args, '--kubeconfig', cluster.kubeconfigPath, '-n', ns]);

  it('lists the tasks with PARENT; -o wide adds TRIGGER and STARTED (the oldest record kept)', async () => {
    const table = await get();
    assert.equal(table.code, 0, table.stderr);
    assert.match(
      table.stdout,
      /^NAMESPACE\s+NAME\s+PHASE\s+EPISODES\s+COST\s+REASON\s+STEP\s+PROGRESS\s+PARENT\s+MESSAGE$/m,
    );
    assert.match(
      table.stdout,
      new RegExp(`^${ns}\\s+boss-child\\s+Running\\s+2\\s+\\$0\\.5000\\s+1/1 build\\s+boss\\s*$`, 'm'),
    );
    const wide = await get('-o', 'wide');
    assert.equal(wide.code, 0, wide.stderr);
    assert.match(wide.stdout, /PARENT\s+TRIGGER\s+STARTED\s+LAST OUTCOME/);
    assert.match(wide.stdout, /boss-child\s.*\bboss\s+nightly\s+2026-12-01T18:44:00Z\b/);
  });

  it('--episodes: DURATION, GATES passed/failed, OPS applied/rejected and STEP per record', async () => {
    const table = await get('boss-child', '--episodes');
    assert.equal(table.code, 0, table.stderr);
    const [header, one, two] = table.stdout.trim().split('\n');
    assert.match(header, /^EPISODE\s+STEP\s+OUTCOME\s+EXIT\s+DURATION\s+COST\s+GATES\s+OPS\s+FINISHED\s+REASON$/);
    assert.match(
      one,
      /^1\s+build\s+continue\s+0\s+1m05s\s+\$0\.2500\s+0 passed, 1 failed: test\s+2 applied, 1 rejected\s/,
    );
    assert.match(two, /^2\s+build\s+succeeded\s+0\s+2\.4s\s+\$0\.2500\s+1 passed\s+2026-12-01T18:46:02Z/);
  });

  it('one task: its merge queue lines under the row, the PR and the forge refusing it (as locally)', async () => {
    const one = await get('boss-child');
    assert.equal(one.code, 0, one.stderr);
    assert.match(
      one.stdout,
      /\n\nMerge queue q: needsReview \(pull request #4\); 1 rebase, 0 resolution episodes\n {2}forge refused: gitea -> 405\n/,
    );
  });

  it('a task that is not there, and a local-only flag, are said plainly', async () => {
    const missing = await get('nobody');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, new RegExp(`no AgentTask ${ns}/nobody on the cluster`));
    const steps = await get('boss-child', '--steps');
    assert.equal(steps.code, 2);
    assert.match(steps.stderr, /--steps reads the local state; on a cluster: kubectl get at boss-child -o yaml/);
  });
});
