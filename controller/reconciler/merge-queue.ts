// The merge queue's rules (issue 32 §3), pure: facts about one queue (its waiting tasks, its journal, whether
// the controller just restarted, whether `into` already has the rebased commit) in, the next git step out;
// and each step's outcome in, the next journal out. core/merge-queue-loop.ts gathers, writes the journal
// atomically before each step and carries them out, so a kill -9 anywhere resumes from the journal.
// Batches (as Bors and GitHub's merge queues): waiting tasks of one lane (no queue gates, same remote and
// `into`) are rebased one onto the other, oldest first, and `into` is pushed once, to the last of them.
// A task with a pull request (on `into`) is landed through the forge's merge API instead of a push.

/** Where the one integration in flight is; written to the journal before the step runs. */
export type QueueStage = 'rebase' | 'resolve' | 'gate' | 'push' | 'done' | 'review';

export interface QueueJournal {
  key: string;
  stage: QueueStage;
  /** Rebases tried (a rejected push rebases again). */
  attempts: number;
  /** Resolution episodes run. */
  episodes: number;
  /** The rebased commit about to be pushed (stage push), so a restart can tell whether the push happened. */
  rebased?: string;
  why?: 'conflict' | 'gate' | 'forge';
  conflicts?: string[];
  gate?: string;
  output?: string;
  /** The resolution episode started at stage resolve (written before it starts): a restart kills what is left of it. */
  episode?: number;
  /** A batch: the tasks rebased before `key`, oldest first, each with its rebased commit (pushed with `key`'s). */
  batch?: BatchMember[];
  /** A batch: the tasks still to rebase after `key`, oldest first (chosen when it began). */
  next?: string[];
  /** The pull request merged through the forge (stage done or review). */
  pull?: number;
  /** The forge's refusal to merge it (stage review, why forge): redacted and bounded by the forge client. */
  forge?: string;
}

export interface BatchMember {
  key: string;
  commit: string;
}

export interface QueueEntry {
  key: string;
  /** When the task succeeded: the queue's order. */
  enqueuedAt: string;
  /**
   * Where it lands (remote and `into`) when it can share a push: no queue gates, no PR to merge through the
   * forge's API. Tasks of one lane in a row form a batch; undefined: it integrates alone.
   */
  lane?: string;
  /** Its trigger opens a pull request for it that is not recorded yet: it waits (a push would race the PR). */
  awaitingPull?: boolean;
}

export interface QueueFacts {
  entries: readonly QueueEntry[];
  journal?: QueueJournal;
  /** The first pass since the controller started: the clone may hold a half-done rebase or a stale lock. */
  recovering: boolean;
  /** Journal at stage push: `into` on the remote already contains the rebased commit. */
  intoHasRebased?: boolean;
  /** Journal at stage push, after a restart: the clone holds the rebased commit (a cluster's new leader clones afresh). */
  cloneHasRebased?: boolean;
  /** The journal task's onConflict.episodes. */
  maxEpisodes: number;
  /** The journal task's open pull request onto `into`: it is merged through the forge's API, not pushed. */
  pull?: number;
}

export type QueueAction =
  /** episode: a resolution episode to kill; gate: a gate run (a cluster's gate pod) to stop. */
  | { type: 'clean'; episode?: number; gate?: true }
  | { type: 'begin'; key: string; next?: string[] }
  | { type: 'rebase' }
  | { type: 'resolve' }
  | { type: 'gate' }
  | { type: 'push' }
  | { type: 'merge'; pull: number }
  | { type: 'finish'; key: string; result: 'integrated' | 'needsReview' };

/** A push rejected this many times (into kept moving under us) is left for a person. */
export const QUEUE_ATTEMPTS_MAX = 5;
/**
 * Tasks in one batch: one push for up to this many (a push costs ~5 processes on the remote), while a rejected
 * push or a restart redoes at most this many rebases, and the journal (a ConfigMap on a cluster) stays small.
 */
export const QUEUE_BATCH_MAX = 16;

/** The next steps of one queue; empty when it has nothing to do. */
export function decideQueue(facts: QueueFacts): QueueAction[] {
  const j = facts.journal;
  if (!j) {
    const [first, ...rest] = batchOf(facts.entries.filter((e) => !e.awaitingPull));
    return first ? [{ type: 'begin', key: first, ...(rest.length > 0 ? { next: rest } : {}) }] : [];
  }
  if (j.stage === 'done' || (j.stage === 'push' && facts.intoHasRebased)) {
    return [{ type: 'finish', key: j.key, result: 'integrated' }];
  }
  if (j.stage === 'review') return [{ type: 'finish', key: j.key, result: 'needsReview' }];
  const orphan = {
    ...(j.episode !== undefined ? { episode: j.episode } : {}),
    ...(j.stage === 'gate' ? { gate: true as const } : {}),
  };
  const clean: QueueAction[] = facts.recovering ? [{ type: 'clean', ...orphan }] : [];
  // A batch cut short by a restart begins again from its first task: only a push of its head is trusted, and a
  // cluster's new leader clones afresh, without the batch's rebased commits.
  const restartBatch = j.stage === 'rebase' || (j.stage === 'push' && facts.cloneHasRebased === false);
  if (facts.recovering && j.batch?.length && restartBatch) return [...clean, againFromFirst(j)];
  // A push that did not land from a clone that never had the commit: rebased (and gated) again, then pushed.
  if (j.stage === 'push' && facts.cloneHasRebased === false) return [...clean, { type: 'rebase' }];
  // The merge step asks the forge first whether the PR is merged already: a restart never merges it twice.
  if (j.stage === 'push')
    return [...clean, facts.pull !== undefined ? { type: 'merge', pull: facts.pull } : { type: 'push' }];
  // A half-done rebase, resolution or gate run is not trusted after a restart: the rebase is done again.
  if (facts.recovering || j.stage === 'rebase') return [...clean, { type: 'rebase' }];
  if (j.stage === 'resolve') {
    return j.episodes < facts.maxEpisodes
      ? [{ type: 'resolve' }]
      : [{ type: 'finish', key: j.key, result: 'needsReview' }];
  }
  return [{ type: 'gate' }];
}

export type StepOutcome =
  /** rebased: the queue has no gates, so the rebased commit is pushed next. */
  | { step: 'rebase'; kind: 'clean'; rebased?: string }
  | { step: 'rebase' | 'resolve'; kind: 'conflict'; files: string[]; output?: string }
  | { step: 'resolve'; kind: 'resolved' }
  | { step: 'gate'; kind: 'passed'; rebased: string }
  | { step: 'gate'; kind: 'failed'; gate: string; output: string }
  | { step: 'push'; kind: 'pushed' }
  /** `into` moved under the push, or under the forge's merge: rebased again. */
  | { step: 'push' | 'merge'; kind: 'rejected' }
  /** commit: what `into` got (a forge's rebase merge may write new commits; a fast-forward keeps `rebased`). */
  | { step: 'merge'; kind: 'merged'; pull: number; commit?: string }
  | { step: 'merge'; kind: 'refused'; pull: number; reason: string };

/** The oldest waiting task and, when it has a lane, the tasks of its lane right behind it (up to the bound). */
export function batchOf(entries: readonly QueueEntry[]): string[] {
  const sorted = oldestFirst(entries);
  const lane = sorted[0]?.lane;
  if (lane === undefined) return sorted.slice(0, 1).map((e) => e.key);
  const stop = sorted.findIndex((e) => e.lane !== lane);
  return sorted.slice(0, Math.min(stop < 0 ? sorted.length : stop, QUEUE_BATCH_MAX)).map((e) => e.key);
}

/** The journal after a step's outcome (what the loop writes before the next step). */
export function afterStep(j: QueueJournal, outcome: StepOutcome): QueueJournal {
  const base = { key: j.key, attempts: j.attempts, episodes: j.episodes };
  const batch = j.batch?.length ? { batch: j.batch } : {};
  switch (outcome.kind) {
    case 'clean':
      if (!outcome.rebased) return { ...base, stage: 'gate' };
      return j.next?.length
        ? nextInBatch(j, outcome.rebased)
        : { ...base, ...batch, stage: 'push', rebased: outcome.rebased };
    case 'conflict': {
      // Mid-batch: the batch ends before this task, which begins again (alone, as today) after the push.
      if (outcome.step === 'rebase' && j.batch?.length) return endBatch(j.batch, j.attempts);
      const episodes = outcome.step === 'resolve' ? j.episodes + 1 : j.episodes;
      return { ...base, episodes, stage: 'resolve', why: 'conflict', conflicts: outcome.files, output: outcome.output };
    }
    case 'resolved':
      return { ...base, episodes: j.episodes + 1, stage: 'gate' };
    case 'passed':
      return { ...base, stage: 'push', rebased: outcome.rebased };
    case 'failed':
      return { ...base, stage: 'resolve', why: 'gate', gate: outcome.gate, output: outcome.output };
    case 'pushed':
      return { ...base, ...batch, stage: 'done', rebased: j.rebased };
    case 'merged':
      return { ...base, stage: 'done', rebased: outcome.commit ?? j.rebased, pull: outcome.pull };
    case 'refused':
      return { ...base, stage: 'review', why: 'forge', pull: outcome.pull, forge: outcome.reason };
    case 'rejected':
      return rejected(j);
  }
}

/** The batch's tasks (those rebased, the one in flight, those after it) begun again, oldest first. */
function againFromFirst(j: QueueJournal): QueueAction {
  const [first = j.key, ...rest] = [...(j.batch ?? []).map((m) => m.key), j.key, ...(j.next ?? [])];
  return { type: 'begin', key: first, ...(rest.length ? { next: rest } : {}) };
}

/** `into` moved under the push: the batch is rebased again from its first task, or that one is left for a person. */
function rejected(j: QueueJournal): QueueJournal {
  const [first = j.key, ...rest] = [...(j.batch ?? []).map((m) => m.key), j.key];
  const episodes = j.batch?.length ? 0 : j.episodes;
  if (j.attempts + 1 >= QUEUE_ATTEMPTS_MAX)
    return { key: first, stage: 'review', attempts: j.attempts, episodes, why: 'conflict' };
  return { ...beginJournal(first, rest), attempts: j.attempts + 1, episodes };
}

function nextInBatch(j: QueueJournal, rebased: string): QueueJournal {
  const [key, ...next] = j.next as string[];
  const batch = [...(j.batch ?? []), { key: j.key, commit: rebased }];
  return {
    key: key as string,
    stage: 'rebase',
    attempts: j.attempts,
    episodes: 0,
    batch,
    ...(next.length ? { next } : {}),
  };
}

/** The tasks rebased so far are pushed: the last of them carries the push, the others ride along. */
function endBatch(batch: readonly BatchMember[], attempts: number): QueueJournal {
  const last = batch[batch.length - 1] as BatchMember;
  const rest = batch.slice(0, -1);
  return {
    key: last.key,
    stage: 'push',
    attempts,
    episodes: 0,
    rebased: last.commit,
    ...(rest.length ? { batch: rest } : {}),
  };
}

/** The journal a task's integration (a batch's: the tasks after it in `next`) starts with. */
export function beginJournal(key: string, next: readonly string[] = []): QueueJournal {
  return { key, stage: 'rebase', attempts: 1, episodes: 0, ...(next.length ? { next: [...next] } : {}) };
}

/** Every task integrated by this journal's push, oldest first, each with its own rebased commit. */
export function integratedBy(j: QueueJournal): BatchMember[] {
  return [...(j.batch ?? []), ...(j.rebased ? [{ key: j.key, commit: j.rebased }] : [])];
}

/** Every task in flight: rebased, being rebased, or still to rebase in this batch. */
export function inFlight(j: QueueJournal): string[] {
  return [...(j.batch ?? []).map((m) => m.key), j.key, ...(j.next ?? [])];
}

/**
 * Whether a journal must be durable before its step runs. Not `done` (the `push` journal on record already
 * tells a restart to check `into`), nor a batch's later rebases: a restart redoes the batch from the journal
 * it began with (nothing of it was pushed), so a batch takes two writes, not one per task.
 */
export function mustBeDurable(j: QueueJournal | undefined): boolean {
  if (!j) return true;
  return j.stage !== 'done' && !(j.stage === 'rebase' && (j.batch?.length ?? 0) > 0);
}

/** Oldest first; the key breaks ties so every pass picks the same task. */
export function oldestFirst(entries: readonly QueueEntry[]): QueueEntry[] {
  return [...entries].sort((a, b) =>
    a.enqueuedAt === b.enqueuedAt ? (a.key < b.key ? -1 : 1) : a.enqueuedAt < b.enqueuedAt ? -1 : 1,
  );
}

/** Each waiting task's position: 0 for the one integrating, then 1, 2… in the order they will go. */
export function queuePositions(entries: readonly QueueEntry[], journal?: QueueJournal): Map<string, number> {
  const out = new Map<string, number>();
  if (journal) for (const key of inFlight(journal)) out.set(key, 0);
  for (const e of oldestFirst(entries)) if (!out.has(e.key)) out.set(e.key, out.size + (journal ? 0 : 1));
  return out;
}

/**
 * Whose status a `begin` rewrites: the tasks that begin (a batch's all) and tasks not yet recorded as queued. A
 * queued task's position is as of its `at`: rewriting every waiting task at each step would be N² writes.
 */
export function positionsToWrite(
  positions: ReadonlyMap<string, number>,
  beginning: readonly string[],
  recorded: ReadonlyMap<string, string | undefined>,
): Map<string, number> {
  return new Map([...positions].filter(([key]) => beginning.includes(key) || recorded.get(key) !== 'queued'));
}

/** What a NeedsReview message says went wrong (the forge's refusal, a gate, or the conflicting files). */
export function reviewReason(j: QueueJournal, files: readonly string[]): string {
  if (j.why === 'forge') return `the forge refused to merge pull request #${j.pull ?? '?'}: ${j.forge ?? ''}`;
  if (j.why === 'gate') return `queue gate ${j.gate ?? '?'} still fails after ${j.episodes} resolution episode(s)`;
  return `conflicts in ${files.join(', ')} after ${j.episodes} resolution episode(s)`;
}

/** {{integrate.conflicts}}: the conflicting files and their markers, or the failing gate and its output. */
export function conflictsText(j: QueueJournal): string {
  if (j.why === 'gate')
    return `The queue gate "${j.gate ?? '?'}" failed after the rebase. Its output:\n${j.output ?? ''}`;
  return `These files conflict: ${(j.conflicts ?? []).join(', ')}\n${j.output ?? ''}`;
}

/** The resolution episode's prompt template; the executor renders it with resolutionVars() in one pass. */
export const RESOLUTION_TEMPLATE = [
  'The merge queue is rebasing your branch {{branch}} onto {{into}} and needs you.',
  '{{integrate.conflicts}}',
  'Edit the files in this directory so that both changes are kept and no conflict markers remain, and make the',
  "queue's gates pass. Do not run git commands: the queue commits and continues the rebase itself.",
].join('\n');

/** The resolution prompt's placeholders: {{branch}}, {{into}}, {{integrate.conflicts}}. */
export function resolutionVars(j: QueueJournal, branch: string, into: string): Record<string, string> {
  return { branch, into, 'integrate.conflicts': conflictsText(j) };
}
