// completion.signals: Gluon's multi-signal score, as a pure function and inside reconcile(): EXIT_SIGNAL +50,
// checklist complete +40, completion keywords +10 each (at most +20), three test-only episodes → complete.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { EpisodeResultInput } from '../../controller/api/episode-result.ts';
import type { Evidence } from '../../controller/api/leash.ts';
import { completionScore, countTestOnly } from '../../controller/reconciler/completion.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { ReconcileInput } from '../../controller/reconciler/reconcile.ts';
import { ending } from '../support/ending-episode.ts';

const full = { done: 4, skipped: 1, total: 5, inProgress: 0, failed: 0 };
const partial = { done: 3, skipped: 0, total: 5, inProgress: 1, failed: 0 };
const unchanged: Evidence['workspace'] = { kind: 'directory', changed: false };
const changed: Evidence['workspace'] = { kind: 'directory', changed: true };

test('completionScore: each signal and its points', () => {
  const table: Array<{ evidence: Evidence | undefined; testOnly?: number; score: number; signals: string[] }> = [
    { evidence: undefined, score: 0, signals: [] },
    { evidence: { ralph: { exitSignal: true } }, score: 50, signals: ['exitSignal+50'] },
    { evidence: { ralph: { exitSignal: false } }, score: 0, signals: [] },
    { evidence: { checklist: full }, score: 40, signals: ['checklist+40'] },
    { evidence: { checklist: partial }, score: 0, signals: [] },
    { evidence: { checklist: { ...full, total: 0, done: 0, skipped: 0 } }, score: 0, signals: [] },
    { evidence: { completionKeywords: ['task is complete'] }, score: 10, signals: ['keywords+10'] },
    {
      evidence: { completionKeywords: ['task is complete', 'all done', 'nothing left to do'] },
      score: 20,
      signals: ['keywords+20'],
    },
    {
      evidence: { ralph: { exitSignal: true }, completionKeywords: ['all done'] },
      score: 60,
      signals: ['exitSignal+50', 'keywords+10'],
    },
    {
      evidence: { ralph: { exitSignal: true }, checklist: full, completionKeywords: ['all done', 'task is complete'] },
      score: 110,
      signals: ['exitSignal+50', 'checklist+40', 'keywords+20'],
    },
    { evidence: { ralph: { workType: 'TESTING' } }, testOnly: 2, score: 0, signals: [] },
    { evidence: { ralph: { workType: 'TESTING' } }, testOnly: 3, score: 100, signals: ['testOnly+100'] },
  ];
  for (const row of table) {
    assert.deepEqual(
      completionScore(row.evidence, row.testOnly ?? 0),
      { score: row.score, signals: row.signals },
      JSON.stringify(row),
    );
  }
});

test('countTestOnly: clean TESTING episodes with an unchanged workspace count; outages leave the streak alone', () => {
  const testing = (workspace: Evidence['workspace'], extra: EpisodeResultInput = { exitCode: 0 }) =>
    episodeResult({ ...extra, evidence: { ralph: { workType: 'testing' }, ...(workspace ? { workspace } : {}) } });
  const table: Array<{ name: string; prev: number; result: ReturnType<typeof episodeResult>; next: number }> = [
    { name: 'TESTING, unchanged', prev: 2, result: testing(unchanged), next: 3 },
    { name: 'TESTING, but the workspace changed', prev: 2, result: testing(changed), next: 0 },
    { name: 'TESTING, no workspace evidence', prev: 2, result: testing(undefined), next: 0 },
    {
      name: 'IMPLEMENTATION, unchanged',
      prev: 2,
      result: episodeResult({ exitCode: 0, evidence: { ralph: { workType: 'IMPLEMENTATION' }, workspace: unchanged } }),
      next: 0,
    },
    { name: 'TESTING but failed', prev: 2, result: testing(unchanged, { exitCode: 1 }), next: 0 },
    { name: 'a transient error', prev: 2, result: episodeResult({ exitCode: 1, errorClass: 'transient' }), next: 2 },
    { name: 'a usage limit', prev: 2, result: episodeResult({ exitCode: 1, errorClass: 'usageLimit' }), next: 2 },
    { name: 'interrupted', prev: 2, result: episodeResult({ exitCode: null, interrupted: true }), next: 2 },
  ];
  for (const row of table) assert.equal(countTestOnly(row.prev, row.result), row.next, row.name);
});

const signals = { completion: { signals: { threshold: 60 } } };
const withPlan = { progress: { checklist: 'PLAN.md' }, completion: { signals: { threshold: 60 } } };

const cases: Array<{
  name: string;
  in: ReconcileInput;
  phase: string;
  reason: string;
  outcome: string;
  score?: number;
  testOnly?: number;
  message?: RegExp;
}> = [
  {
    name: 'EXIT_SIGNAL alone (50) is below 60: continue, where without signals it would finish',
    in: ending(signals, { exitCode: 0, completion: 'exitSignal', evidence: { ralph: { exitSignal: true } } }),
    phase: 'Pending',
    reason: 'Queued',
    outcome: 'continue',
    score: 50,
  },
  {
    name: 'EXIT_SIGNAL + one keyword = 60: succeeded, reason SignalsScore',
    in: ending(signals, {
      exitCode: 0,
      completion: 'exitSignal',
      evidence: { ralph: { exitSignal: true }, completionKeywords: ['all done'] },
    }),
    phase: 'Succeeded',
    reason: 'SignalsScore',
    outcome: 'succeeded',
    score: 60,
    message: /SignalsScore: score 60 \(exitSignal\+50, keywords\+10\)/,
  },
  {
    name: 'checklist 100 % + two keywords = 60: succeeded',
    in: ending(withPlan, {
      exitCode: 0,
      evidence: { checklist: full, completionKeywords: ['all done', 'task is complete'] },
    }),
    phase: 'Succeeded',
    reason: 'SignalsScore',
    outcome: 'succeeded',
    score: 60,
  },
  {
    name: 'a higher threshold needs more: 90 of 100 continues',
    in: ending(
      { progress: { checklist: 'PLAN.md' }, completion: { signals: { threshold: 100 } } },
      { exitCode: 0, completion: 'exitSignal', evidence: { ralph: { exitSignal: true }, checklist: full } },
    ),
    phase: 'Pending',
    reason: 'Queued',
    outcome: 'continue',
    score: 90,
  },
  {
    name: 'the third test-only episode in a row completes',
    in: ending(
      signals,
      { exitCode: 0, evidence: { ralph: { workType: 'TESTING' }, workspace: unchanged } },
      { testOnlyEpisodes: 2 },
      7,
    ),
    phase: 'Succeeded',
    reason: 'SignalsScore',
    outcome: 'succeeded',
    score: 100,
    testOnly: 3,
  },
  {
    name: 'the second test-only episode only continues and counts',
    in: ending(
      signals,
      { exitCode: 0, evidence: { ralph: { workType: 'TESTING' }, workspace: unchanged } },
      { testOnlyEpisodes: 1 },
      6,
    ),
    phase: 'Pending',
    reason: 'Queued',
    outcome: 'continue',
    score: 0,
    testOnly: 2,
  },
  {
    name: 'a test-only streak broken by a code change starts again',
    in: ending(
      signals,
      { exitCode: 0, evidence: { ralph: { workType: 'TESTING' }, workspace: changed } },
      { testOnlyEpisodes: 2 },
      7,
    ),
    phase: 'Pending',
    reason: 'Queued',
    outcome: 'continue',
    testOnly: 0,
  },
  {
    name: 'requires still applies: a score of 100 without the required changes continues',
    in: ending(
      { completion: { signals: { threshold: 60 }, requires: ['changes'] } },
      { exitCode: 0, evidence: { ralph: { workType: 'TESTING' }, workspace: unchanged } },
      { testOnlyEpisodes: 2 },
      7,
    ),
    phase: 'Pending',
    reason: 'Queued',
    outcome: 'continue',
    score: 100,
    message: /missing changes/,
  },
  {
    name: 'with completion.verify, a score counts only when verify passed: failed verify → VerifyFailed',
    in: ending(
      { completion: { signals: { threshold: 60 }, verify: ['npm', 'test'] } },
      { exitCode: 0, verifyExitCode: 1, evidence: { ralph: { exitSignal: true }, completionKeywords: ['all done'] } },
    ),
    phase: 'Waiting',
    reason: 'Backoff',
    outcome: 'failed',
  },
  {
    name: 'with completion.verify, a score whose verify did not run continues',
    in: ending(
      { progress: { checklist: 'PLAN.md' }, completion: { signals: { threshold: 40 }, verify: ['npm', 'test'] } },
      { exitCode: 0, evidence: { checklist: full } },
    ),
    phase: 'Pending',
    reason: 'Queued',
    outcome: 'continue',
    message: /verify \(the verify command did not run\)/,
  },
  {
    name: 'with completion.verify passed, the score finishes',
    in: ending(
      { completion: { signals: { threshold: 60 }, verify: ['npm', 'test'] } },
      { exitCode: 0, verifyExitCode: 0, evidence: { ralph: { exitSignal: true }, completionKeywords: ['all done'] } },
    ),
    phase: 'Succeeded',
    reason: 'SignalsScore',
    outcome: 'succeeded',
  },
  {
    name: 'the promise sentinel is still a completion signal of its own',
    in: ending(signals, { exitCode: 0, completion: 'promise' }),
    phase: 'Succeeded',
    reason: 'PromiseDetected',
    outcome: 'succeeded',
    score: 0,
  },
  {
    name: 'a failed episode is never completed by its score',
    in: ending(signals, {
      exitCode: 1,
      evidence: { ralph: { exitSignal: true }, completionKeywords: ['all done', 'task is complete'] },
    }),
    phase: 'Waiting',
    reason: 'Backoff',
    outcome: 'failed',
    score: 70,
  },
];

for (const c of cases) {
  test(`signals: ${c.name}`, () => {
    const out = reconcile(c.in);
    assert.equal(out.status.phase, c.phase);
    assert.equal(out.status.reason, c.reason);
    assert.equal(out.status.lastEpisode?.outcome, c.outcome);
    if (c.score !== undefined) assert.equal(out.status.lastEpisode?.completionScore, c.score);
    if (c.testOnly !== undefined) assert.equal(out.status.testOnlyEpisodes, c.testOnly);
    if (c.message) assert.match(`${out.status.message} ${out.status.lastEpisode?.message ?? ''}`, c.message);
  });
}

test('signals: without completion.signals nothing is scored or counted, and EXIT_SIGNAL alone finishes as before', () => {
  const out = reconcile(
    ending(
      {},
      {
        exitCode: 0,
        completion: 'exitSignal',
        evidence: { ralph: { exitSignal: true, workType: 'TESTING' }, workspace: unchanged },
      },
    ),
  );
  assert.equal(out.status.reason, 'ExitSignalDetected');
  assert.equal(out.status.lastEpisode?.completionScore, undefined);
  assert.equal(out.status.testOnlyEpisodes, undefined);
});

test('signals: a threshold outside 1..100 is refused naming the field', () => {
  const bad = AgentTaskSpecSchema.safeParse({
    prompt: 'p',
    agent: { command: ['a'] },
    completion: { signals: { threshold: 0 } },
  });
  assert.equal(bad.success, false);
  assert.deepEqual(
    bad.error?.issues.map((i) => i.path.join('.')),
    ['completion.signals.threshold'],
  );
  const unknown = AgentTaskSpecSchema.safeParse({
    prompt: 'p',
    agent: { command: ['a'] },
    completion: { signals: { treshold: 60 } },
  });
  assert.equal(unknown.success, false);
});
