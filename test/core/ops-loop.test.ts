// The loop's part of agent ops: ApplyOps through the applier, an OpsRejected Warning for ops refused there
// (never their payload), and episodic_ops_total by op and result.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { episodeResult } from '../../controller/api/episode-result.ts';
import { countEpisodeOps, performApplyOps } from '../../controller/core/ops-loop.ts';
import type { DesiredTask, StatusSink } from '../../controller/core/ports.ts';
import { EpisodicMetrics } from '../../controller/metrics/metrics.ts';
import { LocalOpsApplier } from '../../controller/ops/local-ops.ts';
import { tempDir } from '../support/local.ts';

const task: DesiredTask = {
  key: 'team/t',
  namespace: 'team',
  name: 't',
  generation: 1,
  dependsOn: [],
  deleting: false,
};

test('ApplyOps: applied ops and refused ones are counted; refusals make one Warning without payloads', async () => {
  const metrics = new EpisodicMetrics({ defaultMetrics: false });
  const events: string[] = [];
  const sink = {
    event: (_t: unknown, type: string, reason: string, message: string) => events.push(`${type} ${reason}: ${message}`),
  };
  await performApplyOps(
    {
      applier: new LocalOpsApplier(tempDir()),
      sink: sink as unknown as StatusSink,
      logger: pino({ level: 'silent' }),
      metrics,
    },
    task,
    {
      type: 'ApplyOps',
      episode: 4,
      ops: [
        { op: 'set', key: 'k', value: 'sk-SECRET' },
        { op: 'send', to: 'other', message: 'sk-SECRET too' },
      ],
    },
  );
  countEpisodeOps(metrics, task, {
    number: 4,
    state: 'finished',
    result: episodeResult({
      exitCode: 0,
      ops: [{ op: 'push', frames: ['x'] }],
      opsRejected: [{ line: 3, message: 'not valid JSON' }],
    }),
  });
  assert.deepEqual(events, [
    'Warning OpsRejected: episode 4: 1 ops rejected while applying: send: not supported by this controller yet',
  ]);
  const text = await metrics.registry.getSingleMetricAsString('episodic_ops_total');
  assert.match(text, /episodic_ops_total\{namespace="team",op="set",result="applied"\} 1/);
  assert.match(text, /episodic_ops_total\{namespace="team",op="send",result="rejected"\} 1/);
  assert.match(text, /episodic_ops_total\{namespace="team",op="push",result="applied"\} 1/);
  assert.match(text, /episodic_ops_total\{namespace="team",op="invalid",result="rejected"\} 1/);
  assert.ok(!events.join('').includes('sk-SECRET'));
});
