// Pure parts of a cluster merge queue's gate pod (executors/cluster/queue-gate-pod.ts): what the queue makes of
// the pod's result, its deadline, and its name and spec (the task's pod, `episodic queue-gates`, no model key).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import {
  buildQueueGatePod,
  gateDeadlineSeconds,
  gateRunsOf,
} from '../../controller/executors/cluster/queue-gate-pod.ts';
import { queueGatePodName } from '../../controller/kube/names.ts';

const gates = [
  { name: 'lint', check: ['npm', 'run', 'lint'], maxFixEpisodes: 3, timeoutSeconds: 60 },
  {
    name: 'fmt',
    fix: ['npm', 'run', 'fmt'],
    check: ['git', 'diff', '--exit-code'],
    maxFixEpisodes: 3,
    timeoutSeconds: 30,
  },
];

describe('merge queue on a cluster: the gate pod', () => {
  const cases: Array<[string, Parameters<typeof episodeResult>[0], ReturnType<typeof gateRunsOf> | 'throws']> = [
    [
      'the runs it reported',
      { exitCode: 1, gates: [{ name: 'lint', exitCode: 2, output: 'bad' }] },
      [{ name: 'lint', exitCode: 2, output: 'bad' }],
    ],
    [
      'a transient end without runs: run again (throws)',
      { exitCode: null, errorClass: 'transient', message: 'evicted' },
      'throws',
    ],
    [
      'a fatal end without runs: the first gate failed, saying why',
      { exitCode: null, errorClass: 'fatal', message: 'ImagePullBackOff: no such image' },
      [{ name: 'lint', exitCode: null, output: 'the gate pod did not run the gates: ImagePullBackOff: no such image' }],
    ],
  ];
  for (const [name, result, want] of cases)
    it(name, () => {
      if (want === 'throws')
        assert.throws(() => gateRunsOf(episodeResult(result), gates), /did not run the gates: evicted/);
      else assert.deepEqual(gateRunsOf(episodeResult(result), gates), want);
    });

  it("deadline: each gate's fix and check, plus the clone", () => {
    assert.equal(gateDeadlineSeconds(gates), 600 + 60 + 2 * 30);
  });

  it("is the task's pod with the queue-gates runner, a bounded name and no episode label", () => {
    const long = 'x'.repeat(60);
    assert.ok(queueGatePodName(long).length <= 63 && queueGatePodName(long).endsWith('-mq-gate'));
    const spec = AgentTaskSpecSchema.parse({
      prompt: 'p',
      agent: { image: 'img:1', command: ['claude', '-p'], env: [{ name: 'OPENAI_API_KEY', value: 'k' }] },
      workspace: { git: { url: 'https://git.example/r.git', ref: 'work/t', secretRef: { name: 'git' } } },
      integrate: { into: 'main', queue: 'q', gates },
    });
    const pod: any = buildQueueGatePod({
      task: { metadata: { name: 't', namespace: 'ns1', uid: 'u1' } },
      spec,
      queue: 'q',
      branch: 'episodic/merge-queue/q/t',
      commit: 'a'.repeat(40),
      gates,
    });
    assert.equal(pod.metadata.name, 't-mq-gate');
    assert.equal(pod.metadata.labels['episodic.dev/episode'], undefined);
    assert.equal(pod.spec.activeDeadlineSeconds, 720);
    const env = Object.fromEntries(pod.spec.containers[0].env.map((e: any) => [e.name, e.value]));
    assert.equal(env.OPENAI_API_KEY, undefined);
    assert.deepEqual(JSON.parse(env.EPISODIC_QUEUE_GATES_CONFIG).git, {
      url: 'https://git.example/r.git',
      ref: 'episodic/merge-queue/q/t',
      secretRef: { name: 'git' },
    });
    assert.deepEqual(pod.spec.containers[0].envFrom, [{ secretRef: { name: 'git' } }], 'the git secret for the clone');
  });
});
