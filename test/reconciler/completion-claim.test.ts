// Table test of completionClaim(): the one rule for "the agent claims the task done" that the executor (to
// run verify), the log recovery and the outcome share.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import { classifyOutcome, completionClaim } from '../../controller/reconciler/outcome.ts';
import type { ClaimFacts, ClaimRules, CompletionClaim } from '../../controller/reconciler/outcome.ts';

const plain: ClaimRules = { onExitZero: false, signals: false };
const exitZero: ClaimRules = { onExitZero: true, signals: false };
const signals: ClaimRules = { onExitZero: false, signals: true };
const clean = { exitCode: 0, agentError: false };

const cases: Array<{ name: string; end: ClaimFacts; rules: ClaimRules; claim: CompletionClaim | undefined }> = [
  { name: 'the promise', end: { ...clean, completion: 'promise' }, rules: plain, claim: 'promise' },
  { name: 'EXIT_SIGNAL', end: { ...clean, completion: 'exitSignal' }, rules: plain, claim: 'exitSignal' },
  { name: 'a clean exit says nothing', end: clean, rules: plain, claim: undefined },
  { name: 'onExitZero: a clean exit', end: clean, rules: exitZero, claim: 'exitZero' },
  {
    name: 'a failed exit claims nothing',
    end: { exitCode: 1, completion: 'promise' },
    rules: exitZero,
    claim: undefined,
  },
  { name: 'killed (no exit code)', end: { exitCode: null, completion: 'promise' }, rules: plain, claim: undefined },
  {
    name: 'an agent error claims nothing',
    end: { ...clean, agentError: true, completion: 'promise' },
    rules: plain,
    claim: undefined,
  },
  {
    name: 'signals: the promise still stands alone',
    end: { ...clean, completion: 'promise' },
    rules: signals,
    claim: 'promise',
  },
  {
    name: 'signals: EXIT_SIGNAL is one signal of a score',
    end: { ...clean, completion: 'exitSignal' },
    rules: signals,
    claim: 'score',
  },
  {
    name: 'signals + onExitZero: EXIT_SIGNAL is a clean exit',
    end: { ...clean, completion: 'exitSignal' },
    rules: { onExitZero: true, signals: true },
    claim: 'exitZero',
  },
  {
    name: 'signals: completion keywords',
    end: { ...clean, evidence: { completionKeywords: ['all done'] } },
    rules: signals,
    claim: 'score',
  },
  {
    name: 'signals: no keywords found',
    end: { ...clean, evidence: { completionKeywords: [] } },
    rules: signals,
    claim: undefined,
  },
  {
    name: 'signals: a test-only episode (WORK_TYPE testing)',
    end: { ...clean, evidence: { ralph: { workType: 'TESTING' } } },
    rules: signals,
    claim: 'score',
  },
  {
    name: 'keywords without completion.signals are not a claim',
    end: { ...clean, evidence: { completionKeywords: ['all done'] } },
    rules: plain,
    claim: undefined,
  },
  {
    name: 'signals: nothing said',
    end: { ...clean, evidence: { ralph: { workType: 'IMPLEMENTATION' } } },
    rules: signals,
    claim: undefined,
  },
];

for (const c of cases) {
  test(`completion claim: ${c.name} → ${c.claim ?? 'none'}`, () => {
    assert.equal(completionClaim(c.end, c.rules), c.claim);
  });
}

test('completion claim: the outcome starts from it; a score is left to judgeEpisode', () => {
  const spec = (completion: Record<string, unknown>) =>
    AgentTaskSpecSchema.parse({ prompt: 'p', agent: { command: ['a'] }, completion }).completion;
  const outcome = (result: Parameters<typeof episodeResult>[0], completion: Record<string, unknown>) =>
    classifyOutcome(episodeResult(result), spec(completion));
  assert.deepEqual(outcome({ exitCode: 0, completion: 'exitSignal' }, {}), {
    outcome: 'succeeded',
    reason: 'ExitSignalDetected',
  });
  assert.deepEqual(outcome({ exitCode: 0, completion: 'exitSignal' }, { signals: {} }), {
    outcome: 'continue',
    reason: 'NoCompletionSignal',
  });
  assert.deepEqual(outcome({ exitCode: 0, completion: 'exitSignal' }, { signals: {}, onExitZero: true }), {
    outcome: 'succeeded',
    reason: 'ExitedZero',
  });
  assert.deepEqual(outcome({ exitCode: 0, completion: 'promise' }, { verify: ['t'] }), {
    outcome: 'failed',
    reason: 'VerifyFailed',
  });
});

test('outcome: a sandbox bound hit fails the episode with reason ResourceLimit, whatever it printed', () => {
  const completion = AgentTaskSpecSchema.parse({ prompt: 'p', agent: { command: ['a'] } }).completion;
  const sandbox = { network: 'none', resources: 'cgroup-v1' } as const;
  for (const limitHit of ['memory', 'pids'] as const)
    assert.deepEqual(
      classifyOutcome(
        episodeResult({ exitCode: 0, completion: 'promise', sandbox: { ...sandbox, limitHit } }),
        completion,
      ),
      { outcome: 'failed', reason: 'ResourceLimit' },
    );
  assert.deepEqual(classifyOutcome(episodeResult({ exitCode: 0, completion: 'promise', sandbox }), completion), {
    outcome: 'succeeded',
    reason: 'PromiseDetected',
  });
});
