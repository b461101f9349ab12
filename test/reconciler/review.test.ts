// What needs a person (issue 19 §6) in the pure reconciler: the fold of each episode's review facts into
// status.review (flagged items replaced, entries accumulated, removed ones dropped, caps with counts, agent text
// made printable), and the ReviewItems event in the pass a task ends — through reconcile() as the loop drives it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { REVIEW_ENTRIES_MAX, REVIEW_FLAGGED_MAX, REVIEW_TEXT_MAX } from '../../controller/api/bounds.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { EpisodeResultInput } from '../../controller/api/episode-result.ts';
import type { ReviewEntry, ReviewEvidence, ReviewStatus } from '../../controller/api/review.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { ReconcileResult } from '../../controller/reconciler/reconcile.ts';
import { foldReview, reviewEvents, reviewWords } from '../../controller/reconciler/review.ts';

const entry = (file: ReviewEntry['file'], text: string, digest: string): ReviewEntry => ({ file, text, digest });
const D1 = entry('DISCOVERY.md', 'the API is paginated', 'aaaaaaaaaaa1');
const D2 = entry('DISCOVERY.md', 'tests need a database', 'aaaaaaaaaaa2');
const I1 = entry('IDEAS.md', 'cache the token', 'bbbbbbbbbbb1');

const at = (e: ReviewEntry, episode: number) => ({ ...e, episode });

test('foldReview: one row per rule', () => {
  const some: ReviewStatus = {
    flagged: ['old [!]'],
    flaggedMore: 2,
    entries: [at(D1, 1), at(I1, 1)],
    entriesMore: 1,
  };
  const rows: Array<{ name: string; prev?: ReviewStatus; facts: ReviewEvidence; want: ReviewStatus }> = [
    {
      name: 'first facts: flagged items and added entries, each entry with its episode',
      facts: { flagged: ['migrate sessions'], added: [D1, I1] },
      want: { flagged: ['migrate sessions'], flaggedMore: 0, entries: [at(D1, 3), at(I1, 3)], entriesMore: 0 },
    },
    {
      name: 'flagged items are the plan as of this episode: none now, none listed',
      prev: some,
      facts: {},
      want: { flagged: [], flaggedMore: 0, entries: some.entries, entriesMore: 1 },
    },
    {
      name: 'entries accumulate, oldest first; one already listed is not listed twice',
      prev: some,
      facts: { added: [D1, D2] },
      want: { flagged: [], flaggedMore: 0, entries: [at(D1, 1), at(I1, 1), at(D2, 3)], entriesMore: 1 },
    },
    {
      name: 'an entry the episode removed leaves the list',
      prev: some,
      facts: { removed: [D1.digest] },
      want: { flagged: [], flaggedMore: 0, entries: [at(I1, 1)], entriesMore: 1 },
    },
    {
      name: 'counts the collector left out add to the counts',
      prev: some,
      facts: { flagged: ['x'], flaggedMore: 4, addedMore: 5 },
      want: { flagged: ['x'], flaggedMore: 4, entries: some.entries, entriesMore: 6 },
    },
    {
      name: 'agent text is made printable and bounded again',
      facts: { flagged: [`evil\u001b]0;title\u0007 ${'y'.repeat(500)}`] },
      want: {
        flagged: [`evil\\x1b]0;title\\x07 ${'y'.repeat(REVIEW_TEXT_MAX - 22)}…`],
        flaggedMore: 0,
        entries: [],
        entriesMore: 0,
      },
    },
  ];
  for (const row of rows) assert.deepEqual(foldReview(row.prev, row.facts, 3), row.want, row.name);
});

test('foldReview: past the caps, the rest is counted', () => {
  const flagged = Array.from({ length: REVIEW_FLAGGED_MAX + 3 }, (_, i) => `item ${i}`);
  const added = Array.from({ length: REVIEW_ENTRIES_MAX + 4 }, (_, i) =>
    entry('IDEAS.md', `idea ${i}`, i.toString(16).padStart(12, '0')),
  );
  const review = foldReview(undefined, { flagged, added }, 1);
  assert.equal(review.flagged.length, REVIEW_FLAGGED_MAX);
  assert.equal(review.flaggedMore, 3);
  assert.equal(review.entries.length, REVIEW_ENTRIES_MAX);
  assert.equal(review.entriesMore, 4);
  assert.equal(review.entries[0].text, 'idea 0', 'the oldest are kept');
  assert.equal(
    reviewWords(review, 'PLAN.md'),
    `${REVIEW_FLAGGED_MAX + 3 + REVIEW_ENTRIES_MAX + 4} items need review: 23 [!] items in PLAN.md, 34 new entries in DISCOVERY.md / IDEAS.md`,
  );
});

test('reviewEvents: once, in the pass the task ends, only with items', () => {
  const review: ReviewStatus = { flagged: ['a'], flaggedMore: 0, entries: [], entriesMore: 0 };
  const status = (phase: AgentTaskStatus['phase'], r?: ReviewStatus): AgentTaskStatus => ({
    ...emptyStatus(),
    phase,
    review: r,
  });
  const rows: Array<[string, AgentTaskStatus['phase'], AgentTaskStatus, number]> = [
    ['Running → Succeeded with an item', 'Running', status('Succeeded', review), 1],
    ['Running → NeedsReview with an item', 'Running', status('NeedsReview', review), 1],
    ['Waiting → Failed with an item', 'Waiting', status('Failed', review), 1],
    ['Running → Skipped with an item', 'Running', status('Skipped', review), 1],
    ['already ended: no second event', 'Succeeded', status('Succeeded', review), 0],
    ['still running', 'Running', status('Running', review), 0],
    ['ended with nothing to review', 'Running', status('Succeeded', { ...review, flagged: [] }), 0],
    ['ended, no review facts at all', 'Running', status('Succeeded'), 0],
  ];
  for (const [name, before, after, want] of rows) {
    const events = reviewEvents(before, after, 'PLAN.md');
    assert.equal(events.length, want, name);
    if (want) assert.equal(events[0].message, '1 item needs review: 1 [!] item in PLAN.md', name);
  }
});

/** A task driven through reconcile(): start, then each episode ends with the given result. */
function drive(results: EpisodeResultInput[]): { status: AgentTaskStatus; passes: ReconcileResult[] } {
  const spec = AgentTaskSpecSchema.parse({
    prompt: 'p',
    agent: { command: ['agent'] },
    completion: { promise: 'DONE' },
    progress: { checklist: 'TODO.md' },
    breaker: { noProgressEpisodes: 0, halfOpenEpisodes: 0, sameErrorEpisodes: 0 },
  });
  let status = emptyStatus();
  const passes: ReconcileResult[] = [];
  const pass = (episode?: Parameters<typeof reconcile>[0]['episode'], minute = passes.length) => {
    const r = reconcile({
      namespace: 'default',
      name: 't',
      generation: 1,
      spec,
      status,
      episode,
      dependencies: {},
      freeSlots: 1,
      now: new Date(Date.parse('2026-11-25T12:00:00Z') + minute * 60_000),
      jitter: 0,
    });
    passes.push(r);
    status = r.status;
  };
  pass();
  for (const result of results) {
    const number = status.currentEpisode?.number ?? 0;
    pass({ number, state: 'finished', result: episodeResult(result) });
  }
  return { status, passes };
}

const events = (r: ReconcileResult) =>
  r.actions.flatMap((a) => (a.type === 'RecordEvent' && a.reason === 'ReviewItems' ? [a.message] : []));

test('reconcile: review facts of every episode are kept; ReviewItems when the task succeeds', () => {
  const { status, passes } = drive([
    { exitCode: 0, evidence: { review: { flagged: ['auth: no Redis in CI'], added: [D1] } } },
    { exitCode: 0, evidence: { review: { flagged: ['auth: no Redis in CI'], added: [I1] } } },
    { exitCode: 0, completion: 'promise', evidence: { review: { flagged: ['auth: no Redis in CI'] } } },
  ]);
  assert.equal(status.phase, 'Succeeded');
  assert.deepEqual(status.review, {
    flagged: ['auth: no Redis in CI'],
    flaggedMore: 0,
    entries: [at(D1, 1), at(I1, 2)],
    entriesMore: 0,
  });
  assert.deepEqual(passes.map(events), [
    [],
    [],
    [],
    ['3 items need review: 1 [!] item in TODO.md, 2 new entries in DISCOVERY.md / IDEAS.md'],
  ]);
});

test('reconcile: an episode without review facts leaves status.review as it was; nothing to review, no event', () => {
  const { status, passes } = drive([
    { exitCode: 0, evidence: { review: { added: [D1] } } },
    { exitCode: 0 },
    { exitCode: 0, completion: 'promise', evidence: { review: { removed: [D1.digest] } } },
  ]);
  assert.equal(status.phase, 'Succeeded');
  assert.deepEqual(status.review, { flagged: [], flaggedMore: 0, entries: [], entriesMore: 0 });
  assert.deepEqual(passes.flatMap(events), []);
});

test('reconcile: a fatal episode ends the task Failed and says how many items need review', () => {
  const { status, passes } = drive([
    { exitCode: 1, errorClass: 'fatal', message: '401', evidence: { review: { added: [D1, D2] } } },
  ]);
  assert.equal(status.phase, 'Failed');
  assert.deepEqual(events(passes[1]), ['2 items need review: 2 new entries in DISCOVERY.md / IDEAS.md']);
});

test('reconcile: a task that never had anything to review carries no status.review', () => {
  const { status, passes } = drive([
    { exitCode: 0, evidence: { review: {} } },
    { exitCode: 0, completion: 'promise', evidence: { review: { removed: [D1.digest] } } },
  ]);
  assert.equal(status.phase, 'Succeeded');
  assert.equal(status.review, undefined);
  assert.deepEqual(passes.flatMap(events), []);
});
