// What the reconciler says when an episode ends, the breaker moves or a task runs out of episodes: every
// message must say what the evidence says and nothing more (issue 18.4: "made progress" was written for
// episodes in which the breaker saw none). Each row: the facts, the words that must appear, and the
// claims that must not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Evidence } from '../../controller/api/leash.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { ReconcileInput } from '../../controller/reconciler/reconcile.ts';
import { ending } from '../support/ending-episode.ts';

const still: Evidence = { workspace: { kind: 'git', changed: false, headBefore: 'a1', headAfter: 'a1', dirty: false } };
const moved: Evidence = { workspace: { kind: 'git', changed: true, headBefore: 'a1', headAfter: 'b2', dirty: false } };
const checklistOnly = (done: number): Evidence => ({
  checklist: { done, total: 5, skipped: 0, inProgress: 0, failed: 0 },
});

const cases: Array<{
  name: string;
  in: ReconcileInput;
  /** The event of this reason (or status.message when 'status'). */
  where: string;
  says: RegExp;
  never?: RegExp;
}> = [
  {
    name: 'an episode that left the workspace unchanged did not make progress',
    in: ending({}, { exitCode: 0, evidence: still }),
    where: 'EpisodeFinished',
    says: /^episode 1 left the workspace unchanged; no completion signal$/,
    never: /made progress/,
  },
  {
    name: 'an episode that changed the workspace says so',
    in: ending({}, { exitCode: 0, evidence: moved }),
    where: 'EpisodeFinished',
    says: /^episode 1 changed the workspace; no completion signal$/,
  },
  {
    name: 'no evidence either way: neither progress nor its absence is claimed',
    in: ending({}, { exitCode: 0 }),
    where: 'EpisodeFinished',
    says: /showed no evidence of progress either way \(workspace not inspected, no checklist\)/,
    never: /made progress|unchanged/,
  },
  {
    name: 'a checklist that advanced, the workspace not inspected',
    in: ending({ progress: { checklist: 'PLAN.md' } }, { exitCode: 0, evidence: checklistOnly(2) }),
    where: 'EpisodeFinished',
    says: /^episode 1 advanced the checklist 2\/5; no completion signal$/,
  },
  {
    name: 'a checklist that stood still, the workspace not inspected: no claim about the workspace',
    in: ending(
      { progress: { checklist: 'PLAN.md' } },
      { exitCode: 0, evidence: checklistOnly(2) },
      { progress: { done: 2, total: 5, skipped: 0, inProgress: 0, failed: 0, summary: '2/5' } },
      2,
    ),
    where: 'EpisodeFinished',
    says: /made no checklist progress \(workspace not inspected\) \(checklist 2\/5\)/,
    never: /workspace unchanged|left the workspace/,
  },
  {
    name: 'a completion score below the threshold is not "no completion signal"',
    in: ending(
      { completion: { signals: { threshold: 60 } } },
      { exitCode: 0, evidence: { ...still, ralph: { exitSignal: true } } },
    ),
    where: 'EpisodeFinished',
    says: /^episode 1 left the workspace unchanged; a completion score of 50 below 60 \(exitSignal\+50\)$/,
    never: /no completion signal/,
  },
  {
    name: 'a breaker that opens on the episode that also skips the task says why it opened, not "progress again"',
    in: ending(
      { breaker: { sameErrorEpisodes: 3 }, limits: { maxConsecutiveFailures: 3 } },
      { exitCode: 1, evidence: { errorFingerprint: 'E42' } },
      {
        consecutiveFailures: 2,
        breaker: { state: 'Closed', noProgress: 0, halfOpen: 0, sameError: 2, lastErrorFingerprint: 'E42' },
      },
      3,
    ),
    where: 'BreakerOpen',
    says: /^circuit breaker Closed → Open \(sameError\): the same error 3 episodes in a row: E42$/,
    never: /progress again/,
  },
  {
    name: 'a breaker opened for no progress without a workspace look does not claim an unchanged workspace',
    in: ending(
      { progress: { checklist: 'PLAN.md' }, breaker: { noProgressEpisodes: 2, halfOpenEpisodes: 0 } },
      { exitCode: 0, evidence: checklistOnly(1) },
      {
        progress: { done: 1, total: 5, skipped: 0, inProgress: 0, failed: 0, summary: '1/5' },
        breaker: { state: 'Closed', noProgress: 1, halfOpen: 0, sameError: 0 },
      },
      2,
    ),
    where: 'CircuitOpen',
    says: /no progress in 2 episodes in a row \(workspace not inspected; checklist 1\/5; no progress yet\)/,
    never: /no workspace change|unchanged/,
  },
  {
    name: 'an interruption says what happened, not a restart it did not see',
    in: ending(
      {},
      {
        exitCode: null,
        interrupted: true,
        message: 'episode 1 was on record but never started (the controller stopped in between)',
      },
    ),
    where: 'EpisodeInterrupted',
    says: /^episode 1 was interrupted: episode 1 was on record but never started/,
    never: /controller restart/,
  },
  {
    name: 'out of episodes: not "without a completion signal" (a claim may have been rejected)',
    in: ending(
      { limits: { maxEpisodes: 1 }, completion: { requires: ['changes'] } },
      { exitCode: 0, completion: 'promise', evidence: still },
    ),
    where: 'status',
    says: /^1 episodes without finishing the task \(maxEpisodes 1\)$/,
    never: /without a completion signal/,
  },
];

for (const c of cases) {
  test(`episode messages: ${c.name}`, () => {
    const out = reconcile(c.in);
    const events = out.actions.flatMap((a) => (a.type === 'RecordEvent' ? [a] : []));
    const text = c.where === 'status' ? out.status.message : events.find((e) => e.reason === c.where)?.message;
    assert.ok(text !== undefined, `no ${c.where}: ${events.map((e) => `${e.reason}: ${e.message}`).join(' | ')}`);
    assert.match(text, c.says);
    if (c.never) assert.doesNotMatch(text, c.never);
    // No message of the pass claims progress the breaker did not count.
    if (out.status.breaker && out.status.breaker.noProgress > 0)
      for (const e of events) assert.doesNotMatch(e.message, /made progress/, `${e.reason}: ${e.message}`);
  });
}
