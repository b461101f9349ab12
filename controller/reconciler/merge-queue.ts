// The merge queue's rules (issue 32 §3), pure: facts about one queue (its waiting tasks, its journal, whether
// the controller just restarted, whether `into` already has the rebased commit) in, the next git step out;
// and each step's outcome in, the next journal out. core/merge-queue-loop.ts gathers, writes the journal
// atomically before each step and carries them out, so a kill -9 anywhere resumes from the journal.
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
  /** The pull request merged through the forge (stage done or review). */
  pull?: number;
  /** The forge's refusal to merge it (stage review, why forge): redacted and bounded by the forge client. */
  forge?: string;
}

export interface QueueEntry {
  key: string;
  /** When the task succeeded: the queue's order. */
  enqueuedAt: string;
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
  /** The journal task's onConflict.episodes. */
  maxEpisodes: number;
  /** The journal task's open pull request onto `into`: it is merged through the forge's API, not pushed. */
  pull?: number;
}

export type QueueAction =
  | { type: 'clean'; episode?: number }
  | { type: 'begin'; key: string }
  | { type: 'rebase' }
  | { type: 'resolve' }
  | { type: 'gate' }
  | { type: 'push' }
  | { type: 'merge'; pull: number }
  | { type: 'finish'; key: string; result: 'integrated' | 'needsReview' };

/** A push rejected this many times (into kept moving under us) is left for a person. */
export const QUEUE_ATTEMPTS_MAX = 5;

/** The next steps of one queue; empty when it has nothing to do. */
export function decideQueue(facts: QueueFacts): QueueAction[] {
  const j = facts.journal;
  if (!j) {
    const next = oldestFirst(facts.entries.filter((e) => !e.awaitingPull))[0];
    return next ? [{ type: 'begin', key: next.key }] : [];
  }
  if (j.stage === 'done' || (j.stage === 'push' && facts.intoHasRebased)) {
    return [{ type: 'finish', key: j.key, result: 'integrated' }];
  }
  if (j.stage === 'review') return [{ type: 'finish', key: j.key, result: 'needsReview' }];
  const orphan = j.episode !== undefined ? { episode: j.episode } : {};
  const clean: QueueAction[] = facts.recovering ? [{ type: 'clean', ...orphan }] : [];
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
  | { step: 'push'; kind: 'rejected' }
  /** commit: what `into` got (a forge's rebase merge may write new commits; a fast-forward keeps `rebased`). */
  | { step: 'merge'; kind: 'merged'; pull: number; commit?: string }
  | { step: 'merge'; kind: 'refused'; pull: number; reason: string };

/** The journal after a step's outcome (what the loop writes before the next step). */
export function afterStep(j: QueueJournal, outcome: StepOutcome): QueueJournal {
  const base = { key: j.key, attempts: j.attempts, episodes: j.episodes };
  switch (outcome.kind) {
    case 'clean':
      return outcome.rebased ? { ...base, stage: 'push', rebased: outcome.rebased } : { ...base, stage: 'gate' };
    case 'conflict': {
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
      return { ...base, stage: 'done', rebased: j.rebased };
    case 'merged':
      return { ...base, stage: 'done', rebased: outcome.commit ?? j.rebased, pull: outcome.pull };
    case 'refused':
      return { ...base, stage: 'review', why: 'forge', pull: outcome.pull, forge: outcome.reason };
    case 'rejected':
      return j.attempts + 1 >= QUEUE_ATTEMPTS_MAX
        ? { ...base, stage: 'review', why: 'conflict' }
        : { ...base, attempts: j.attempts + 1, stage: 'rebase' };
  }
}

/** The journal a task's integration starts with. */
export function beginJournal(key: string): QueueJournal {
  return { key, stage: 'rebase', attempts: 1, episodes: 0 };
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
  if (journal) out.set(journal.key, 0);
  for (const e of oldestFirst(entries)) if (!out.has(e.key)) out.set(e.key, out.size + (journal ? 0 : 1));
  return out;
}

/**
 * Whose status a `begin` rewrites: the task that begins and tasks not yet recorded as queued. A queued task's
 * position is as of its `at`: rewriting every waiting task at each step would be N² writes for N tasks.
 */
export function positionsToWrite(
  positions: ReadonlyMap<string, number>,
  beginning: string,
  recorded: ReadonlyMap<string, string | undefined>,
): Map<string, number> {
  return new Map([...positions].filter(([key]) => key === beginning || recorded.get(key) !== 'queued'));
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
