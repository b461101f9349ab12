// A resolution episode is its task's episode (reconciler/merge-queue-episode.ts): its number, outcome, the
// status counting it and its record.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { EpisodeResult } from '../../controller/api/episode-result.ts';
import {
  recordResolution,
  RESOLUTION_REASON,
  resolutionEpisodeNumber,
  resolutionOutcome,
} from '../../controller/reconciler/merge-queue-episode.ts';

const outcomes: Array<[string, Partial<EpisodeResult>, string]> = [
  ['exit 0', { exitCode: 0 }, 'succeeded'],
  ['exit 1', { exitCode: 1 }, 'failed'],
  ['exit 0 with an agent error', { exitCode: 0, agentError: true }, 'failed'],
  ['timed out', { exitCode: null, timedOut: true }, 'timeout'],
  ['cancelled', { exitCode: null, cancelled: true }, 'cancelled'],
  ['interrupted', { exitCode: null, interrupted: true }, 'interrupted'],
  ['usage limit', { exitCode: 1, errorClass: 'usageLimit' }, 'usageLimit'],
  ['transient', { exitCode: 1, errorClass: 'transient' }, 'transient'],
  ['never started', { exitCode: null, errorClass: 'fatal' }, 'fatal'],
];

for (const [name, fields, want] of outcomes) {
  test(`resolutionOutcome: ${name} → ${want}`, () => {
    assert.equal(resolutionOutcome(episodeResult({ exitCode: null, ...fields })), want);
  });
}

const succeeded = { ...emptyStatus(), phase: 'Succeeded' as const, episodes: 3, skippedSteps: 1, costUSD: 0.5 };
const last = { number: 4, outcome: 'succeeded' as const, finishedAt: '2026-01-01T00:00:00Z' };

test('resolutionEpisodeNumber: the next after every number used (episodes and skipped steps)', () => {
  assert.equal(resolutionEpisodeNumber(succeeded), 5);
  assert.equal(resolutionEpisodeNumber(emptyStatus()), 1);
});

test('recordResolution: counted in episodes, spend and tokens; phase and lastEpisode stay; a record', () => {
  const result = episodeResult({ exitCode: 0, costUSD: 0.25, tokens: { input: 10, output: 5 }, message: 'ok' });
  const times = { startedAt: '2026-01-01T00:01:00Z', finishedAt: '2026-01-01T00:02:00Z' };
  const got = recordResolution('t', { ...succeeded, lastEpisode: last }, { number: 5, ...times, result });
  assert.equal(got.status.episodes, 4);
  assert.equal(got.status.costUSD, 0.75);
  assert.deepEqual(got.status.tokens, { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 });
  assert.equal(got.status.phase, 'Succeeded');
  assert.deepEqual(got.status.lastEpisode, last);
  assert.equal(got.record.number, 5);
  assert.equal(got.record.outcome, 'succeeded');
  assert.equal(got.record.reason, RESOLUTION_REASON);
  assert.equal(got.record.costUSD, 0.25);
  assert.equal(got.record.startedAt, times.startedAt);
});

test("recordResolution: behind the gateway the meter counts, the record keeps the agent's report beside it", () => {
  const gateway = { requests: 2, tokens: { input: 100, output: 50, cacheRead: 0, cacheWrite: 0 }, costUSD: 0.4 };
  const result = episodeResult({ exitCode: 0, costUSD: 0.1, gateway });
  const times = { startedAt: '2026-01-01T00:01:00Z', finishedAt: '2026-01-01T00:02:00Z' };
  const got = recordResolution('t', succeeded, { number: 5, ...times, result });
  assert.equal(got.status.costUSD, 0.9);
  assert.equal(got.status.tokens.input, 100);
  assert.equal(got.record.costUSD, 0.1);
  assert.equal(got.record.gateway?.costUSD, 0.4);
});
