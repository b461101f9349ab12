// The loop's part of agent ops: ApplyOps through the applier, an OpsRejected Warning for ops refused there
// (never their payload), and episodic_ops_total by op and result.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { episodeResult } from '../../controller/api/episode-result.ts';
import { applyOpsThenRecord, countEpisodeOps, performApplyOps } from '../../controller/core/ops-loop.ts';
import { EpisodeRecordSchema } from '../../controller/api/episode-record.ts';
import type { EpisodeRecord } from '../../controller/api/episode-record.ts';
import type { Op } from '../../controller/api/ops.ts';
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

test('ApplyOps then the record: each refused op is named by its place, and the held record says so', async () => {
  const recorded: EpisodeRecord[] = [];
  const sink = {
    event: () => undefined,
    recordEpisode: async (_t: unknown, r: EpisodeRecord) => void recorded.push(r),
  };
  const ctx = {
    applier: new LocalOpsApplier(tempDir()),
    sink: sink as unknown as StatusSink,
    logger: pino({ level: 'silent' }),
  };
  const ops: Op[] = [
    { op: 'send', to: 'a', message: 'm' },
    { op: 'set', key: 'k', value: 'v' },
    { op: 'send', to: 'b', message: 'm' },
  ];
  const record = EpisodeRecordSchema.parse({
    task: 't',
    number: 2,
    outcome: 'succeeded',
    exitCode: 0,
    ops: ['send a', 'set k', 'send b'],
  });
  const refused = await applyOpsThenRecord(ctx, task, { type: 'ApplyOps', episode: 2, ops }, record);
  assert.deepEqual(
    refused.map((r) => [r.index, r.op]),
    [
      [0, 'send'],
      [2, 'send'],
    ],
  );
  assert.deepEqual(recorded[0]?.ops, ['send a (rejected)', 'set k', 'send b (rejected)']);
  assert.match(recorded[0]?.opsRejected ?? '', /send: not supported by this controller yet; send: not supported/);
  // Another episode's record is not held for these ops.
  await applyOpsThenRecord(ctx, task, { type: 'ApplyOps', episode: 3, ops }, record);
  assert.equal(recorded.length, 1);
});
