// The merge queue's rules (reconciler/merge-queue.ts): the next step for each journal and fact, and the
// journal after each step's outcome.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  afterStep,
  beginJournal,
  decideQueue,
  positionsToWrite,
  queuePositions,
  QUEUE_ATTEMPTS_MAX,
  reviewReason,
} from '../../controller/reconciler/merge-queue.ts';
import type { QueueFacts, QueueJournal, StepOutcome } from '../../controller/reconciler/merge-queue.ts';

const entries = [
  { key: 'ns/c', enqueuedAt: '2026-01-01T00:00:03Z' },
  { key: 'ns/a', enqueuedAt: '2026-01-01T00:00:01Z' },
  { key: 'ns/b', enqueuedAt: '2026-01-01T00:00:01Z' },
];
const j = (stage: QueueJournal['stage'], extra: Partial<QueueJournal> = {}): QueueJournal => ({
  key: 'ns/a',
  stage,
  attempts: 1,
  episodes: 0,
  ...extra,
});
const facts = (f: Partial<QueueFacts>): QueueFacts => ({ entries, recovering: false, maxEpisodes: 1, ...f });

const decisions: Array<[string, Partial<QueueFacts>, ReturnType<typeof decideQueue>]> = [
  ['empty queue: nothing', { entries: [] }, []],
  ['no journal: the oldest begins (key breaks the tie)', {}, [{ type: 'begin', key: 'ns/a' }]],
  ['no journal after a restart: no clean needed, begin', { recovering: true }, [{ type: 'begin', key: 'ns/a' }]],
  ['rebase stage: rebase', { journal: j('rebase') }, [{ type: 'rebase' }]],
  [
    'killed mid-rebase: clean, rebase again',
    { journal: j('rebase'), recovering: true },
    [{ type: 'clean' }, { type: 'rebase' }],
  ],
  [
    'killed mid-resolution: clean, rebase again',
    { journal: j('resolve'), recovering: true },
    [{ type: 'clean' }, { type: 'rebase' }],
  ],
  [
    'killed while its resolution episode ran: clean (killing what is left of it), rebase again',
    { journal: j('resolve', { episode: 4 }), recovering: true },
    [{ type: 'clean', episode: 4 }, { type: 'rebase' }],
  ],
  [
    'killed mid-gate: clean, rebase again',
    { journal: j('gate'), recovering: true },
    [{ type: 'clean' }, { type: 'rebase' }],
  ],
  ['resolve with episodes left: a resolution episode', { journal: j('resolve') }, [{ type: 'resolve' }]],
  [
    'resolve with no episodes left: NeedsReview',
    { journal: j('resolve', { episodes: 1 }) },
    [{ type: 'finish', key: 'ns/a', result: 'needsReview' }],
  ],
  [
    'onConflict.episodes 0: NeedsReview at once',
    { journal: j('resolve'), maxEpisodes: 0 },
    [{ type: 'finish', key: 'ns/a', result: 'needsReview' }],
  ],
  ['gate stage: gates', { journal: j('gate') }, [{ type: 'gate' }]],
  ['push stage: push', { journal: j('push', { rebased: 'abc' }) }, [{ type: 'push' }]],
  [
    'killed before the push landed: clean, push again',
    { journal: j('push'), recovering: true, intoHasRebased: false },
    [{ type: 'clean' }, { type: 'push' }],
  ],
  [
    'killed after the push landed: integrated, never pushed twice',
    { journal: j('push'), recovering: true, intoHasRebased: true },
    [{ type: 'finish', key: 'ns/a', result: 'integrated' }],
  ],
  // A task with a pull request onto `into` (its trigger's): the forge merges it, the queue does not push.
  ['push stage with a PR: merged through the forge', { journal: j('push'), pull: 7 }, [{ type: 'merge', pull: 7 }]],
  [
    'killed at the merge, into without the commit: clean, merge step again (it asks whether the PR is merged)',
    { journal: j('push'), pull: 7, recovering: true, intoHasRebased: false },
    [{ type: 'clean' }, { type: 'merge', pull: 7 }],
  ],
  [
    'killed after the forge merged it fast-forward: integrated, no second merge call',
    { journal: j('push'), pull: 7, recovering: true, intoHasRebased: true },
    [{ type: 'finish', key: 'ns/a', result: 'integrated' }],
  ],
  [
    'the oldest awaits the PR its trigger will open: the next one begins',
    { entries: entries.map((e) => (e.key === 'ns/a' ? { ...e, awaitingPull: true } : e)) },
    [{ type: 'begin', key: 'ns/b' }],
  ],
  ['every task awaits its PR: nothing', { entries: entries.map((e) => ({ ...e, awaitingPull: true })) }, []],
  ['a PR fact before the push stage changes nothing', { journal: j('gate'), pull: 7 }, [{ type: 'gate' }]],
  ['done: integrated', { journal: j('done') }, [{ type: 'finish', key: 'ns/a', result: 'integrated' }]],
  ['review: NeedsReview', { journal: j('review') }, [{ type: 'finish', key: 'ns/a', result: 'needsReview' }]],
];

for (const [name, f, want] of decisions) {
  test(`decideQueue: ${name}`, () => assert.deepEqual(decideQueue(facts(f)), want));
}

const steps: Array<[string, QueueJournal, StepOutcome, Partial<QueueJournal>]> = [
  ['a clean rebase goes to the gates', j('rebase'), { step: 'rebase', kind: 'clean' }, { stage: 'gate' }],
  [
    'a clean rebase without queue gates goes straight to the push with its commit',
    j('rebase'),
    { step: 'rebase', kind: 'clean', rebased: 'abc' },
    { stage: 'push', rebased: 'abc' },
  ],
  [
    'a conflicting rebase goes to resolution, naming the files',
    j('rebase'),
    { step: 'rebase', kind: 'conflict', files: ['f.txt'] },
    { stage: 'resolve', why: 'conflict', conflicts: ['f.txt'], episodes: 0 },
  ],
  [
    'a resolution that left conflicts counts its episode',
    j('resolve'),
    { step: 'resolve', kind: 'conflict', files: ['f.txt'] },
    { stage: 'resolve', episodes: 1 },
  ],
  [
    'a resolution that resolved counts its episode and gates',
    j('resolve'),
    { step: 'resolve', kind: 'resolved' },
    { stage: 'gate', episodes: 1 },
  ],
  [
    'passing gates record the commit before the push',
    j('gate'),
    { step: 'gate', kind: 'passed', rebased: 'abc' },
    { stage: 'push', rebased: 'abc' },
  ],
  [
    'a failing gate goes to resolution with its output',
    j('gate'),
    { step: 'gate', kind: 'failed', gate: 'test', output: 'boom' },
    { stage: 'resolve', why: 'gate', gate: 'test', output: 'boom' },
  ],
  [
    'a landed push is done',
    j('push', { rebased: 'abc' }),
    { step: 'push', kind: 'pushed' },
    { stage: 'done', rebased: 'abc' },
  ],
  [
    'a rejected push (into moved) rebases again',
    j('push'),
    { step: 'push', kind: 'rejected' },
    { stage: 'rebase', attempts: 2 },
  ],
  [
    'merged by the forge: done, into at the commit it says (a rebase merge writes new ones)',
    j('push', { rebased: 'abc' }),
    { step: 'merge', kind: 'merged', pull: 7, commit: 'def' },
    { stage: 'done', rebased: 'def', pull: 7 },
  ],
  [
    'merged fast-forward (no commit said): done at the rebased commit',
    j('push', { rebased: 'abc' }),
    { step: 'merge', kind: 'merged', pull: 7 },
    { stage: 'done', rebased: 'abc', pull: 7 },
  ],
  [
    "the forge refused: NeedsReview with the forge's reason",
    j('push', { rebased: 'abc' }),
    { step: 'merge', kind: 'refused', pull: 7, reason: 'gitea -> 405: not mergeable' },
    { stage: 'review', why: 'forge', pull: 7, forge: 'gitea -> 405: not mergeable' },
  ],
  [
    'rejected too often: NeedsReview',
    j('push', { attempts: QUEUE_ATTEMPTS_MAX - 1 }),
    { step: 'push', kind: 'rejected' },
    { stage: 'review' },
  ],
];

for (const [name, journal, outcome, want] of steps) {
  test(`afterStep: ${name}`, () => {
    const got = afterStep(journal, outcome);
    for (const [k, v] of Object.entries(want)) assert.deepEqual(got[k as keyof QueueJournal], v, k);
    assert.equal(got.key, journal.key);
  });
}

test('reviewReason: the forge refusal, a gate, the conflicting files', () => {
  const forge = j('review', { why: 'forge', pull: 7, forge: 'gitea -> 405: closed' });
  assert.equal(reviewReason(forge, []), 'the forge refused to merge pull request #7: gitea -> 405: closed');
  assert.equal(
    reviewReason(j('review', { why: 'gate', gate: 'test', episodes: 1 }), []),
    'queue gate test still fails after 1 resolution episode(s)',
  );
  assert.equal(
    reviewReason(j('review', { why: 'conflict' }), ['a', 'b']),
    'conflicts in a, b after 0 resolution episode(s)',
  );
});

test('beginJournal: first attempt, no episodes, at the rebase', () => {
  assert.deepEqual(beginJournal('ns/x'), { key: 'ns/x', stage: 'rebase', attempts: 1, episodes: 0 });
});

test('queuePositions: 0 integrating, then oldest first', () => {
  assert.deepEqual(
    [...queuePositions(entries, j('gate', { key: 'ns/c' }))],
    [
      ['ns/c', 0],
      ['ns/a', 1],
      ['ns/b', 2],
    ],
  );
  assert.deepEqual(
    [...queuePositions(entries)],
    [
      ['ns/a', 1],
      ['ns/b', 2],
      ['ns/c', 3],
    ],
  );
});

test('positionsToWrite: the task beginning and tasks not yet recorded as queued; queued ones keep theirs', () => {
  const positions = new Map([
    ['ns/c', 0],
    ['ns/a', 1],
    ['ns/b', 2],
    ['ns/d', 3],
  ]);
  const recorded = new Map([
    ['ns/c', 'queued'],
    ['ns/a', 'queued'],
    ['ns/b', undefined],
    ['ns/d', 'conflict'],
  ]);
  assert.deepEqual(
    [...positionsToWrite(positions, 'ns/c', recorded)],
    [
      ['ns/c', 0],
      ['ns/b', 2],
      ['ns/d', 3],
    ],
  );
});
