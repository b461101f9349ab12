// The leash end to end in local mode, with stand-in agents that speak Claude Code's stream-json: a loop
// that changes nothing stops; slow real work does not; one error repeated stops; "done" needs evidence.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readStatus, runCli, specDir } from '../support/local.ts';

const fast = { backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 } };
const plan = (done: number) => ['# Plan', ...[1, 2, 3].map((i) => `- [${i <= done ? 'x' : ' '}] step ${i}`)].join('\n');

test('leash: an agent that never changes anything trips the breaker after 5 + 3 episodes (CircuitOpen), not maxEpisodes', async () => {
  const dir = specDir([
    {
      name: 'stuck',
      spec: { ...fast, limits: { maxEpisodes: 20, episodeTimeoutSeconds: 30 } },
      script: { default: { mode: 'continue' } },
    },
  ]);
  const metricsFile = join(dir, 'metrics.prom');
  const res = await runCli(['run', dir, '--metrics-file', metricsFile]);
  assert.equal(res.code, 1);
  const s = readStatus(dir, 'stuck')?.status;
  assert.equal(s?.reason, 'CircuitOpen');
  assert.equal(s?.episodes, 8);
  assert.equal(s?.breaker?.state, 'Open');
  assert.match(s?.message ?? '', /no progress in 8 episodes in a row \(directory unchanged; no progress yet\)/);
  assert.match(res.stdout + res.stderr, /"event":"CircuitOpen"/);
  const metrics = readFileSync(metricsFile, 'utf8');
  assert.match(
    metrics,
    /episodic_breaker_transitions_total\{namespace="default",to="HalfOpen",rule="noProgress"\} 1\n/,
  );
  assert.match(metrics, /episodic_breaker_transitions_total\{namespace="default",to="Open",rule="noProgress"\} 1\n/);
});

test('leash: an agent that progresses every third episode never trips and runs to its end', async () => {
  const work = (n: number) => ({
    mode: n === 12 ? 'success' : 'continue',
    writeFiles: n % 3 === 0 ? { [`step-${n}.txt`]: 'work' } : undefined,
  });
  const episodes = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [String(i + 1), work(i + 1)]));
  const dir = specDir([
    { name: 'slow', spec: { ...fast, limits: { maxEpisodes: 12, episodeTimeoutSeconds: 30 } }, script: { episodes } },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const s = readStatus(dir, 'slow')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.equal(s?.episodes, 12);
  assert.notEqual(s?.breaker?.state, 'Open');
  assert.equal(s?.workspaceChanges, 4);
});

test('leash: the same error five times in a row opens the breaker before the failure limit', async () => {
  const dir = specDir([
    {
      name: 'looping',
      spec: { ...fast, limits: { maxEpisodes: 20, maxConsecutiveFailures: 10, episodeTimeoutSeconds: 30 } },
      script: { default: { mode: 'fail' } },
    },
  ]);
  const metricsFile = join(dir, 'metrics.prom');
  const res = await runCli(['run', dir, '--metrics-file', metricsFile]);
  assert.equal(res.code, 1);
  const s = readStatus(dir, 'looping')?.status;
  assert.equal(s?.reason, 'CircuitOpen');
  assert.equal(s?.episodes, 5);
  assert.equal(s?.breaker?.trippedBy, 'sameError');
  const metrics = readFileSync(metricsFile, 'utf8');
  assert.match(metrics, /episodic_breaker_transitions_total\{namespace="default",to="Open",rule="sameError"\} 1\n/);
  assert.doesNotMatch(metrics, /to="HalfOpen"/);
});

test('leash: "done" without the change completion.requires is recorded as continue, never success', async () => {
  const dir = specDir([
    {
      name: 'claims',
      spec: { ...fast, completion: { requires: ['changes'] }, limits: { maxEpisodes: 3, episodeTimeoutSeconds: 30 } },
      script: { default: { mode: 'success' } },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1);
  const s = readStatus(dir, 'claims')?.status;
  assert.equal(s?.reason, 'MaxEpisodesReached');
  assert.equal(s?.lastEpisode?.outcome, 'continue');
  assert.match(s?.lastEpisode?.message ?? '', /completion claimed without evidence: missing changes/);
});

test('leash: ticking PLAN.md finishes the task when the checklist is complete', async () => {
  const episodes = Object.fromEntries(
    [1, 2, 3].map((n) => [String(n), { mode: 'continue', writeFiles: { 'PLAN.md': plan(n) } }]),
  );
  const dir = specDir([
    {
      name: 'planned',
      spec: {
        ...fast,
        progress: { checklist: 'PLAN.md' },
        completion: { checklist: true },
        limits: { maxEpisodes: 10, episodeTimeoutSeconds: 30 },
      },
      script: { episodes },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const s = readStatus(dir, 'planned')?.status;
  assert.equal(s?.reason, 'ChecklistComplete');
  assert.equal(s?.episodes, 3);
  assert.deepEqual(s?.progress, { done: 3, total: 3, inProgress: 0, failed: 0, skipped: 0, summary: '3/3' });
  const table = await runCli(['get', dir]);
  assert.match(
    table.stdout,
    /REASON\s+PROGRESS\s+PARENT\s+MESSAGE\n.*planned\s+Succeeded\s+3\s+\S+\s+ChecklistComplete\s+3\/3/,
  );
});
