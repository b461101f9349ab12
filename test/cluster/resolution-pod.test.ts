// Pure parts of the merge queue on a cluster: a resolution episode's pod (the task's agent on the queue's
// scratch branch, the resolution prompt, none of the task's steps, gates or scope, labelled for the queue)
// and where a queue's clone lives and which queue a task waits in.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import { EPISODE_CONFIG_ENV, EPISODE_PROMPT_ENV } from '../../controller/api/episode-config.ts';
import { buildEpisodePod } from '../../controller/executors/cluster/episode-pod.ts';
import { clusterQueuePorts, resolutionSpec, scratchBranch } from '../../controller/executors/cluster/merge-queue.ts';
import { RESOLUTION_LABEL } from '../../controller/kube/names.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { RESOLUTION_TEMPLATE, resolutionVars } from '../../controller/reconciler/merge-queue.ts';

const spec = AgentTaskSpecSchema.parse({
  agent: { image: 'img:1', command: ['claude', '-p'], env: [{ name: 'KEEP', value: '1' }] },
  workspace: { git: { url: 'https://git.example/r.git', ref: 'work/t', from: 'main', secretRef: { name: 'git' } } },
  scope: { paths: ['src/**'] },
  steps: [{ name: 'only', prompt: 'step prompt', gates: [{ name: 'lint', check: ['npm', 'run', 'lint'] }] }],
  integrate: { into: 'main', queue: 'q' },
});
const journal = { key: 'ns1/t', stage: 'resolve' as const, attempts: 1, episodes: 0, why: 'conflict' as const };
const run = {
  number: 2,
  cwd: '/nowhere',
  template: RESOLUTION_TEMPLATE,
  vars: resolutionVars({ ...journal, conflicts: ['a.txt'], output: '<<<<<<< x' }, 'work/t', 'main'),
  status: emptyStatus(),
  queue: 'ns1/q',
  branch: scratchBranch('ns1/q', 't'),
};

describe('merge queue on a cluster: the resolution pod', () => {
  it("runs the task's agent on the scratch branch with the resolution prompt and nothing of its steps", () => {
    const resolved = resolutionSpec(spec, run);
    assert.equal(run.branch, 'episodic/merge-queue/q/t');
    assert.equal(resolved.steps, undefined);
    assert.equal(resolved.scope, undefined);
    const pod: any = buildEpisodePod({
      task: { metadata: { name: 't', namespace: 'ns1', uid: 'u1' } },
      spec: resolved,
      episode: 2,
      promptVars: run.vars,
      resolution: true,
    });
    assert.equal(pod.metadata.name, 't-ep-2');
    assert.equal(pod.metadata.labels[RESOLUTION_LABEL], 'true');
    const env = Object.fromEntries(pod.spec.containers[0].env.map((e: any) => [e.name, e.value]));
    const config = JSON.parse(env[EPISODE_CONFIG_ENV]);
    assert.deepEqual(config.git, {
      url: 'https://git.example/r.git',
      ref: 'episodic/merge-queue/q/t',
      secretRef: { name: 'git' },
    });
    assert.equal(config.gates, undefined, "the task's step gates are the task's, not the queue's");
    assert.equal(config.scope, undefined);
    assert.match(env[EPISODE_PROMPT_ENV], /rebasing your branch work\/t onto main/);
    assert.match(env[EPISODE_PROMPT_ENV], /These files conflict: a\.txt\n<<<<<<< x/);
    assert.equal(env.EPISODIC_MERGE_QUEUE, '1');
    assert.equal(env.KEEP, '1');
    assert.deepEqual(pod.spec.containers[0].envFrom, [{ secretRef: { name: 'git' } }]);
  });

  it("a task's own episode pod carries no resolution label", () => {
    const pod: any = buildEpisodePod({
      task: { metadata: { name: 't', namespace: 'ns1', uid: 'u1' } },
      spec,
      episode: 1,
    });
    assert.equal(pod.metadata.labels[RESOLUTION_LABEL], undefined);
  });

  it('a queue is per namespace, its clone apart from best-of-N clones (DIR/NS/TASK)', () => {
    const ports = clusterQueuePorts({
      client: {} as KubeClient,
      journals: { read: () => undefined, write: async () => {} },
      dir: '/scratch',
    });
    const of = (key: string) => ports.queueOf({ key, spec, status: emptyStatus() });
    assert.equal(of('ns1/t'), 'ns1/q');
    assert.equal(of('ns2/t'), 'ns2/q');
    assert.equal(ports.cloneDir('ns1/q'), '/scratch/.merge-queue/ns1/q');
    assert.equal(ports.shownName('ns1/q'), 'q');
    assert.equal(ports.remoteUrl({ key: 'ns1/t', spec, status: emptyStatus() }), 'https://git.example/r.git');
  });
});
