// The merge queue's rules (reconciler/merge-queue.ts): the next step for each journal and fact, and the
// journal after each step's outcome.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  afterStep,
  batchOf,
  beginJournal,
  decideQueue,
  integratedBy,
  mustBeDurable,
  positionsToWrite,
  queuePositions,
  QUEUE_ATTEMPTS_MAX,
  QUEUE_BATCH_MAX,
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
    'killed mid-gate: clean (stopping its gate run), rebase again',
    { journal: j('gate'), recovering: true },
    [{ type: 'clean', gate: true }, { type: 'rebase' }],
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
    'killed before the push landed, the clone still has the commit: clean, push again',
    { journal: j('push'), recovering: true, intoHasRebased: false, cloneHasRebased: true },
    [{ type: 'clean' }, { type: 'push' }],
  ],
  [
    'killed before the push landed, a new clone without the commit (a new leader): clean, rebase again',
    { journal: j('push'), recovering: true, intoHasRebased: false, cloneHasRebased: false },
    [{ type: 'clean' }, { type: 'rebase' }],
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
  [
    'no journal, gateless tasks of one lane: the oldest begins a batch of them',
    { entries: entries.map((e) => ({ ...e, lane: 'L' })) },
    [{ type: 'begin', key: 'ns/a', next: ['ns/b', 'ns/c'] }],
  ],
  [
    'a batch pushed before a kill -9, into has its head: all integrated, nothing pushed',
    {
      journal: j('push', { rebased: 'c2', batch: [{ key: 'ns/b', commit: 'c1' }] }),
      recovering: true,
      intoHasRebased: true,
    },
    [{ type: 'finish', key: 'ns/a', result: 'integrated' }],
  ],
  [
    'a batch journalled but not pushed before a kill -9: clean, push it once',
    {
      journal: j('push', { rebased: 'c2', batch: [{ key: 'ns/b', commit: 'c1' }] }),
      recovering: true,
      intoHasRebased: false,
    },
    [{ type: 'clean' }, { type: 'push' }],
  ],
  [
    "a batch not pushed, a new leader's fresh clone lacks its commits: clean, the batch begins again from its first",
    {
      journal: j('push', { rebased: 'c2', batch: [{ key: 'ns/b', commit: 'c1' }] }),
      recovering: true,
      intoHasRebased: false,
      cloneHasRebased: false,
    },
    [{ type: 'clean' }, { type: 'begin', key: 'ns/b', next: ['ns/a'] }],
  ],
  [
    'a restart mid-batch (rebasing its second task): clean, the batch begins again with every task it had',
    { journal: j('rebase', { batch: [{ key: 'ns/b', commit: 'c1' }], next: ['ns/c'] }), recovering: true },
    [{ type: 'clean' }, { type: 'begin', key: 'ns/b', next: ['ns/a', 'ns/c'] }],
  ],
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
    'the forge would not fast-forward: into moved since the rebase, so it is rebased again (not NeedsReview)',
    j('push', { rebased: 'abc' }),
    { step: 'merge', kind: 'rejected' },
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

const member = (key: string, commit: string) => ({ key, commit });
steps.push(
  [
    'a clean rebase in a batch: the next task is rebased onto it (no push yet)',
    j('rebase', { next: ['ns/b', 'ns/c'] }),
    { step: 'rebase', kind: 'clean', rebased: 'c1' },
    { key: 'ns/b', stage: 'rebase', batch: [member('ns/a', 'c1')], next: ['ns/c'], rebased: undefined },
  ],
  [
    "the batch's last clean rebase: one push of its commit, carrying the others",
    j('rebase', { key: 'ns/c', batch: [member('ns/a', 'c1'), member('ns/b', 'c2')] }),
    { step: 'rebase', kind: 'clean', rebased: 'c3' },
    { key: 'ns/c', stage: 'push', rebased: 'c3', batch: [member('ns/a', 'c1'), member('ns/b', 'c2')], next: undefined },
  ],
  [
    'a conflict mid-batch ends the batch before that task: the earlier ones are pushed',
    j('rebase', { key: 'ns/c', batch: [member('ns/a', 'c1'), member('ns/b', 'c2')], next: ['ns/d'] }),
    { step: 'rebase', kind: 'conflict', files: ['f.txt'] },
    { key: 'ns/b', stage: 'push', rebased: 'c2', batch: [member('ns/a', 'c1')], next: undefined, conflicts: undefined },
  ],
  [
    "a conflict at the batch's second task: the first is pushed alone",
    j('rebase', { key: 'ns/b', batch: [member('ns/a', 'c1')], next: ['ns/c'] }),
    { step: 'rebase', kind: 'conflict', files: ['f.txt'] },
    { key: 'ns/a', stage: 'push', rebased: 'c1', batch: undefined, next: undefined },
  ],
  [
    "a conflict at the batch's first task: it goes to resolution alone, the rest wait again",
    j('rebase', { next: ['ns/b'] }),
    { step: 'rebase', kind: 'conflict', files: ['f.txt'] },
    { key: 'ns/a', stage: 'resolve', conflicts: ['f.txt'], next: undefined, batch: undefined },
  ],
  [
    'a batch pushed is done, every task with it',
    j('push', { key: 'ns/b', rebased: 'c2', batch: [member('ns/a', 'c1')] }),
    { step: 'push', kind: 'pushed' },
    { key: 'ns/b', stage: 'done', rebased: 'c2', batch: [member('ns/a', 'c1')] },
  ],
  [
    "a batch's push rejected (into moved): the whole batch again from its first task",
    j('push', { key: 'ns/c', rebased: 'c3', batch: [member('ns/a', 'c1'), member('ns/b', 'c2')] }),
    { step: 'push', kind: 'rejected' },
    { key: 'ns/a', stage: 'rebase', attempts: 2, next: ['ns/b', 'ns/c'], batch: undefined, rebased: undefined },
  ],
  [
    "a batch's push rejected too often: its first task is left for a person, the rest wait again",
    j('push', { key: 'ns/b', rebased: 'c2', attempts: QUEUE_ATTEMPTS_MAX - 1, batch: [member('ns/a', 'c1')] }),
    { step: 'push', kind: 'rejected' },
    { key: 'ns/a', stage: 'review', batch: undefined, next: undefined },
  ],
  [
    'a lone task rejected keeps its resolution episodes',
    j('push', { rebased: 'c1', episodes: 1 }),
    { step: 'push', kind: 'rejected' },
    { key: 'ns/a', stage: 'rebase', attempts: 2, episodes: 1, next: undefined },
  ],
);

for (const [name, journal, outcome, want] of steps) {
  test(`afterStep: ${name}`, () => {
    const got = afterStep(journal, outcome);
    for (const [k, v] of Object.entries(want)) assert.deepEqual(got[k as keyof QueueJournal], v, k);
    if (!('key' in want)) assert.equal(got.key, journal.key);
  });
}

const lane = (key: string, at: number, l?: string) => ({
  key,
  enqueuedAt: `2026-01-01T00:00:0${at}Z`,
  ...(l ? { lane: l } : {}),
});
const batches: Array<[string, Parameters<typeof batchOf>[0], string[]]> = [
  ['nothing waits: no batch', [], []],
  ['the oldest has no lane (queue gates): alone', [lane('ns/a', 1), lane('ns/b', 2, 'L')], ['ns/a']],
  [
    'one lane: all, oldest first',
    [lane('ns/c', 3, 'L'), lane('ns/a', 1, 'L'), lane('ns/b', 2, 'L')],
    ['ns/a', 'ns/b', 'ns/c'],
  ],
  [
    'a task without a lane stops the batch (the order stays oldest first)',
    [lane('ns/a', 1, 'L'), lane('ns/b', 2), lane('ns/c', 3, 'L')],
    ['ns/a'],
  ],
  [
    'another lane (another into) stops it too',
    [lane('ns/a', 1, 'L'), lane('ns/b', 2, 'M'), lane('ns/c', 3, 'L')],
    ['ns/a'],
  ],
];
for (const [name, list, want] of batches) test(`batchOf: ${name}`, () => assert.deepEqual(batchOf(list), want));

test('batchOf: at most QUEUE_BATCH_MAX tasks', () => {
  const many = Array.from({ length: QUEUE_BATCH_MAX + 5 }, (_, i) => ({
    key: `ns/t${String(i).padStart(3, '0')}`,
    enqueuedAt: '2026-01-01T00:00:00Z',
    lane: 'L',
  }));
  assert.deepEqual(
    batchOf(many),
    many.slice(0, QUEUE_BATCH_MAX).map((e) => e.key),
  );
});

test('beginJournal: a batch names the tasks after the first', () => {
  assert.deepEqual(beginJournal('ns/a', ['ns/b']), {
    key: 'ns/a',
    stage: 'rebase',
    attempts: 1,
    episodes: 0,
    next: ['ns/b'],
  });
});

test('integratedBy: every task the push carried, each with its own commit', () => {
  assert.deepEqual(integratedBy(j('done', { key: 'ns/b', rebased: 'c2', batch: [member('ns/a', 'c1')] })), [
    member('ns/a', 'c1'),
    member('ns/b', 'c2'),
  ]);
  assert.deepEqual(integratedBy(j('done', { rebased: 'c1' })), [member('ns/a', 'c1')]);
});

test('mustBeDurable: before each step, except done and a batch past its first rebase', () => {
  const cases: Array<[QueueJournal | undefined, boolean]> = [
    [undefined, true],
    [j('rebase', { next: ['ns/b'] }), true],
    [j('rebase', { key: 'ns/b', batch: [member('ns/a', 'c1')] }), false],
    [j('push', { key: 'ns/b', rebased: 'c2', batch: [member('ns/a', 'c1')] }), true],
    [j('resolve'), true],
    [j('done', { rebased: 'c1' }), false],
  ];
  for (const [journal, want] of cases) assert.equal(mustBeDurable(journal), want, JSON.stringify(journal));
});

test('queuePositions: every task of a batch in flight is at 0', () => {
  const batch = j('rebase', { key: 'ns/b', batch: [member('ns/a', 'c1')] });
  assert.deepEqual(
    [...queuePositions(entries, batch)],
    [
      ['ns/a', 0],
      ['ns/b', 0],
      ['ns/c', 2],
    ],
  );
});

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
    [...positionsToWrite(positions, ['ns/c'], recorded)],
    [
      ['ns/c', 0],
      ['ns/b', 2],
      ['ns/d', 3],
    ],
  );
});
