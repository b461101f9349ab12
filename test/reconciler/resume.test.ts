// Supervised resume in reconcile(): which NeedsReview tasks each policy resumes and which check holds the
// rest, a person's request handled once by its token, granted episodes, and the audit trail of all of it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { ResumeRequest } from '../../controller/api/resume.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { ReconcileInput, ReconcileResult } from '../../controller/reconciler/reconcile.ts';

const NOW = new Date('2026-11-23T12:00:00.000Z');
const EARLIER = '2026-11-23T11:00:00.000Z';
const LATER = '2026-11-23T11:30:00.000Z';

type Resume = { policy?: string; maxAutoResumes?: number; cooldownSeconds?: number; grantEpisodes?: number };

function spec(resume: Resume = {}, limits: Record<string, unknown> = {}) {
  return AgentTaskSpecSchema.parse({
    prompt: 'p',
    agent: { command: ['a'] },
    resume,
    limits: { maxEpisodes: 20, ...limits },
  });
}

/** A task stopped for review: by the breaker (noProgress, with progress once, unless said otherwise) or by reason. */
function review(reason: string, status: Partial<AgentTaskStatus> = {}): AgentTaskStatus {
  const breaker =
    reason === 'CircuitOpen'
      ? {
          state: 'Open' as const,
          noProgress: 8,
          halfOpen: 3,
          sameError: 0,
          trippedBy: 'noProgress' as const,
          lastProgressAt: EARLIER,
        }
      : undefined;
  return {
    ...emptyStatus(),
    observedGeneration: 1,
    phase: 'NeedsReview',
    reason,
    message: `stopped: ${reason}`,
    episodes: 8,
    breaker,
    ...status,
  };
}

function input(status: AgentTaskStatus, resume: Resume = {}, extra: Partial<ReconcileInput> = {}): ReconcileInput {
  return {
    namespace: 'default',
    name: 't',
    generation: 1,
    spec: spec(resume),
    status,
    dependencies: {},
    freeSlots: 1,
    now: NOW,
    jitter: 0.5,
    ...extra,
  };
}

function events(out: ReconcileResult): string[] {
  return out.actions.flatMap((a) => (a.type === 'RecordEvent' ? [a.reason] : []));
}

const sameError = (s: Partial<AgentTaskStatus> = {}) =>
  review('CircuitOpen', {
    breaker: {
      state: 'Open',
      noProgress: 0,
      halfOpen: 0,
      sameError: 5,
      trippedBy: 'sameError',
      lastErrorFingerprint: 'boom',
    },
    ...s,
  });

// What each policy does with a task that just needs review (nothing scheduled, nothing held yet).
const policyCases: Array<{ name: string; in: ReconcileInput; held?: string; scheduled?: boolean }> = [
  { name: 'Manual never auto-resumes', in: input(review('CircuitOpen'), { policy: 'Manual' }), held: 'policy' },
  {
    name: 'Conservative schedules a noProgress trip of a task that once progressed',
    in: input(review('CircuitOpen')),
    scheduled: true,
  },
  {
    name: 'Conservative holds a task that never made progress',
    in: input(
      review('CircuitOpen', {
        breaker: { state: 'Open', noProgress: 8, halfOpen: 3, sameError: 0, trippedBy: 'noProgress' },
      }),
    ),
    held: 'noProgressSinceResume',
  },
  {
    name: 'Conservative holds a task with no progress since its last resume',
    in: input(
      review('CircuitOpen', {
        resume: { autoResumes: 1, grantedEpisodes: 0, lastResumeAt: LATER, lastResumeBy: 'policy:Conservative' },
      }),
    ),
    held: 'noProgressSinceResume',
  },
  { name: 'Conservative never resumes the same error', in: input(sameError()), held: 'reason' },
  {
    name: 'Conservative never resumes MaxEpisodesReached',
    in: input(review('MaxEpisodesReached', { episodes: 20 })),
    held: 'reason',
  },
  { name: 'Conservative never resumes a spent budget', in: input(review('BudgetExceeded')), held: 'reason' },
  { name: 'Aggressive schedules the same error', in: input(sameError(), { policy: 'Aggressive' }), scheduled: true },
  {
    name: 'Aggressive schedules a stuck task that never progressed',
    in: input(
      review('CircuitOpen', {
        breaker: { state: 'Open', noProgress: 8, halfOpen: 3, sameError: 0, trippedBy: 'noProgress' },
      }),
      { policy: 'Aggressive' },
    ),
    scheduled: true,
  },
  {
    name: 'Aggressive schedules MaxEpisodesReached (it grants episodes)',
    in: input(review('MaxEpisodesReached', { episodes: 20 }), { policy: 'Aggressive' }),
    scheduled: true,
  },
  {
    name: 'Aggressive never resumes BudgetExceeded',
    in: input(review('BudgetExceeded', { costUSD: 5 }), { policy: 'Aggressive' }),
    held: 'reason',
  },
  {
    name: 'Aggressive never resumes GlobalBudgetExceeded',
    in: input(review('GlobalBudgetExceeded'), { policy: 'Aggressive' }),
    held: 'reason',
  },
  {
    name: 'a breaker trip with the budget spent is held (budget)',
    in: {
      ...input(review('CircuitOpen', { costUSD: 5 }), { policy: 'Aggressive' }),
      spec: AgentTaskSpecSchema.parse({
        prompt: 'p',
        agent: { command: ['a'] },
        resume: { policy: 'Aggressive' },
        limits: { maxCostUSD: 5 },
      }),
    },
    held: 'budget',
  },
  {
    name: 'a breaker trip with --budget-usd spent is held (budget)',
    in: input(review('CircuitOpen', { costUSD: 1 }), {}, { globalBudget: { limitUSD: 2, othersSpentUSD: 1 } }),
    held: 'budget',
  },
  {
    name: 'a breaker trip at maxEpisodes is held (budget): a resume would stop at once',
    in: input(review('CircuitOpen', { episodes: 20 })),
    held: 'budget',
  },
  {
    name: 'maxAutoResumes reached is held',
    in: input(
      review('CircuitOpen', {
        breaker: {
          state: 'Open',
          noProgress: 3,
          halfOpen: 3,
          sameError: 0,
          trippedBy: 'noProgress',
          lastProgressAt: LATER,
        },
        resume: { autoResumes: 5, grantedEpisodes: 0, lastResumeAt: EARLIER },
      }),
    ),
    held: 'maxAutoResumes',
  },
];

for (const c of policyCases) {
  test(`resume policy: ${c.name}`, () => {
    const out = reconcile(c.in);
    assert.equal(out.status.phase, 'NeedsReview');
    assert.equal(
      out.actions.some((a) => a.type === 'StartEpisode'),
      false,
    );
    const last = out.status.audit?.at(-1);
    if (c.held) {
      assert.equal(out.status.resume?.heldBy, c.held);
      assert.deepEqual(events(out), ['AutoResumeHeld']);
      assert.equal(last?.action, 'AutoResumeHeld');
      assert.equal(last?.reason, c.held);
      assert.equal(out.requeueAfterMs, undefined);
    }
    if (c.scheduled) {
      assert.equal(out.status.resume?.nextAutoResumeAt, '2026-11-23T12:01:00.000Z');
      assert.equal(out.requeueAfterMs, 60_000);
      assert.deepEqual(events(out), ['AutoResumeScheduled']);
      assert.equal(last?.action, 'AutoResumeScheduled');
      assert.match(out.status.message ?? '', /auto-resume at 2026-11-23T12:01:00.000Z \(policy \w+, 1 of 5\)/);
    }
  });
}

test('resume: a held task says so once; the same check again records nothing', () => {
  const first = reconcile(input(sameError()));
  const again = reconcile(input(first.status));
  assert.deepEqual(events(again), []);
  assert.deepEqual(again.status.audit, first.status.audit);
});

test('resume: during the cooldown nothing happens but a requeue at its end', () => {
  const waiting = review('CircuitOpen', {
    resume: { autoResumes: 0, grantedEpisodes: 0, nextAutoResumeAt: '2026-11-23T12:00:20.000Z' },
  });
  const out = reconcile(input(waiting));
  assert.equal(out.status.phase, 'NeedsReview');
  assert.equal(out.requeueAfterMs, 20_000);
  assert.deepEqual(events(out), []);
});

test('resume: a due auto-resume re-opens the task in HalfOpen and starts its next episode', () => {
  const due = review('CircuitOpen', {
    resume: { autoResumes: 0, grantedEpisodes: 0, nextAutoResumeAt: '2026-11-23T11:59:00.000Z' },
  });
  const out = reconcile(input(due));
  assert.equal(out.status.phase, 'Running');
  assert.deepEqual(
    out.actions.find((a) => a.type === 'StartEpisode'),
    { type: 'StartEpisode', number: 9 },
  );
  assert.equal(out.status.breaker?.state, 'HalfOpen');
  assert.equal(out.status.breaker?.halfOpen, 0);
  assert.equal(out.status.resume?.autoResumes, 1);
  assert.equal(out.status.resume?.lastResumeBy, 'policy:Conservative');
  assert.equal(out.status.resume?.nextAutoResumeAt, undefined);
  assert.deepEqual(events(out), ['AutoResumed', 'EpisodeStarted']);
  const last = out.status.audit?.at(-1);
  assert.deepEqual([last?.action, last?.by, last?.reason], ['Resumed', 'policy:Conservative', 'CircuitOpen']);
  assert.match(
    last?.message ?? '',
    /resumed from CircuitOpen by policy:Conservative; circuit breaker HalfOpen \(auto-resume 1 of 5\)/,
  );
});

test('resume: a due auto-resume is checked again: a budget spent meanwhile holds it', () => {
  const due = review('CircuitOpen', {
    costUSD: 1,
    resume: { autoResumes: 0, grantedEpisodes: 0, nextAutoResumeAt: '2026-11-23T11:59:00.000Z' },
  });
  const out = reconcile(input(due, {}, { globalBudget: { limitUSD: 1, othersSpentUSD: 0 } }));
  assert.equal(out.status.phase, 'NeedsReview');
  assert.equal(out.status.resume?.nextAutoResumeAt, undefined);
  assert.equal(out.status.resume?.heldBy, 'budget');
  assert.deepEqual(events(out), ['AutoResumeHeld']);
});

test('resume: Aggressive resumes MaxEpisodesReached with grantEpisodes more, added to the cap', () => {
  const due = review('MaxEpisodesReached', {
    episodes: 20,
    resume: { autoResumes: 0, grantedEpisodes: 0, nextAutoResumeAt: EARLIER },
  });
  const out = reconcile(input(due, { policy: 'Aggressive', grantEpisodes: 3 }));
  assert.equal(out.status.phase, 'Running');
  assert.equal(out.status.episodes, 21);
  assert.equal(out.status.resume?.grantedEpisodes, 3);
  const capped = reconcile(
    input(
      { ...review('Pending'), phase: 'Pending', reason: 'Backoff', episodes: 23, resume: out.status.resume },
      { policy: 'Manual' },
    ),
  );
  assert.equal(capped.status.reason, 'MaxEpisodesReached');
  assert.match(capped.status.message ?? '', /23 episodes without finishing the task \(maxEpisodes 20 \+ 3 granted\)/);
});

test('resume: with cooldownSeconds 0 the resume is due at once (requeue 0) and happens on the next pass', () => {
  const tripped = reconcile({
    ...input(
      {
        ...emptyStatus(),
        observedGeneration: 1,
        phase: 'Running',
        episodes: 8,
        currentEpisode: { number: 8, startedAt: EARLIER },
        breaker: { state: 'HalfOpen', noProgress: 7, halfOpen: 2, sameError: 0, lastProgressAt: EARLIER },
      },
      { cooldownSeconds: 0 },
    ),
    episode: {
      number: 8,
      state: 'finished',
      result: episodeResult({ exitCode: 0, evidence: { workspace: { kind: 'directory', changed: false } } }),
    },
  });
  assert.equal(tripped.status.reason, 'CircuitOpen');
  assert.equal(tripped.requeueAfterMs, 0);
  assert.deepEqual(
    tripped.status.audit?.map((a) => a.action),
    ['Stopped', 'AutoResumeScheduled'],
  );
  assert.deepEqual(events(tripped).slice(-2), ['CircuitOpen', 'AutoResumeScheduled']);
  const resumed = reconcile(input(tripped.status, { cooldownSeconds: 0 }));
  assert.equal(resumed.status.phase, 'Running');
  assert.equal(resumed.status.breaker?.state, 'HalfOpen');
});

const request = (r: Partial<ResumeRequest> = {}): ResumeRequest => ({ token: 'tok-1', by: 'alice', ...r });

test('resume by a person: any NeedsReview reason the caps allow, HalfOpen, token recorded, policy count reset', () => {
  const stopped = sameError({ resume: { autoResumes: 5, grantedEpisodes: 0, heldBy: 'maxAutoResumes' } });
  const out = reconcile(input(stopped, { policy: 'Manual' }, { resumeRequest: request() }));
  assert.equal(out.status.phase, 'Running');
  assert.equal(out.status.breaker?.state, 'HalfOpen');
  assert.equal(out.status.resume?.handledToken, 'tok-1');
  assert.equal(out.status.resume?.autoResumes, 0);
  assert.equal(out.status.resume?.lastResumeBy, 'user:alice');
  assert.deepEqual(events(out), ['Resumed', 'EpisodeStarted']);
  const last = out.status.audit?.at(-1);
  assert.deepEqual([last?.action, last?.by, last?.token], ['Resumed', 'user:alice', 'tok-1']);
  // The same request seen again (the annotation stays) is not handled twice.
  const again = reconcile(
    input({ ...stopped, resume: out.status.resume }, { policy: 'Manual' }, { resumeRequest: request() }),
  );
  assert.equal(again.status.phase, 'NeedsReview');
  assert.equal(
    again.actions.some((a) => a.type === 'StartEpisode'),
    false,
  );
});

test('resume by a person: --episodes N grants N more; without it MaxEpisodesReached gets grantEpisodes', () => {
  const capped = review('MaxEpisodesReached', { episodes: 20 });
  const three = reconcile(input(capped, { policy: 'Manual' }, { resumeRequest: request({ episodes: 3 }) }));
  assert.equal(three.status.resume?.grantedEpisodes, 3);
  assert.equal(three.status.phase, 'Running');
  const dflt = reconcile(input(capped, { policy: 'Manual', grantEpisodes: 7 }, { resumeRequest: request() }));
  assert.equal(dflt.status.resume?.grantedEpisodes, 7);
});

test('resume by a person: a spent budget is rejected with the reason; the token is still handled once', () => {
  const broke = review('BudgetExceeded', { costUSD: 5 });
  const s = AgentTaskSpecSchema.parse({ prompt: 'p', agent: { command: ['a'] }, limits: { maxCostUSD: 5 } });
  const out = reconcile({ ...input(broke), spec: s, resumeRequest: request() });
  assert.equal(out.status.phase, 'NeedsReview');
  assert.equal(out.status.resume?.handledToken, 'tok-1');
  assert.deepEqual(events(out).slice(0, 1), ['ResumeRejected']);
  const entry = out.status.audit?.find((a) => a.action === 'ResumeRejected');
  assert.match(entry?.message ?? '', /spent \$5\.0000 of maxCostUSD \$5 \(raise the limit in the spec\)/);
});

test('resume by a person: a malformed request is rejected naming the field; a request for a running task is ignored', () => {
  const bad = reconcile(
    input(
      review('CircuitOpen'),
      { policy: 'Manual' },
      { resumeRequest: request({ error: 'episodic.dev/resume-episodes: must be a whole number' }) },
    ),
  );
  assert.equal(bad.status.phase, 'NeedsReview');
  assert.equal(bad.status.audit?.[0]?.action, 'ResumeRejected');
  assert.match(bad.status.audit?.[0]?.message ?? '', /resume-episodes/);
  const running = {
    ...emptyStatus(),
    observedGeneration: 1,
    phase: 'Running' as const,
    episodes: 2,
    currentEpisode: { number: 2, startedAt: NOW.toISOString() },
  };
  const ignored = reconcile(input(running, {}, { resumeRequest: request() }));
  assert.equal(ignored.status.resume?.handledToken, 'tok-1');
  assert.equal(ignored.status.audit?.[0]?.action, 'ResumeIgnored');
  assert.deepEqual(events(ignored), ['ResumeIgnored']);
});

test('resume: editing the spec of a reviewed task resets the auto-resume count', () => {
  const held = review('CircuitOpen', { resume: { autoResumes: 5, grantedEpisodes: 2, heldBy: 'maxAutoResumes' } });
  const out = reconcile({ ...input(held), generation: 2 });
  assert.equal(out.status.resume?.autoResumes, 0);
  assert.equal(out.status.resume?.grantedEpisodes, 2);
  assert.equal(out.status.resume?.heldBy, undefined);
});

test('resume: the audit trail keeps the last 20 decisions', () => {
  let status = review('CircuitOpen', {
    audit: Array.from({ length: 20 }, (_, i) => ({
      at: EARLIER,
      action: 'Stopped' as const,
      by: 'controller',
      message: `old ${i}`,
    })),
  });
  status = reconcile(input(status, { policy: 'Manual' })).status;
  assert.equal(status.audit?.length, 20);
  assert.equal(status.audit?.[0]?.message, 'old 1');
  assert.equal(status.audit?.at(-1)?.action, 'AutoResumeHeld');
});
