// What needs a person (issue 19 §6): the rule that turns each episode's review facts into status.review, and
// the ReviewItems event when the task ends. Pure. An entry is "new" when an episode added it (it was not in
// DISCOVERY.md / IDEAS.md when that episode started): what was there before the task's first episode never
// is, and an entry a later episode removes leaves the list. `[!]` items are the plan file's as of the last
// episode: an item fixed since then no longer needs review. Item text is agent text: bounded and printable
// here again, whoever gathered it (a termination message can be written by anything in the pod).
import { isTerminal } from '../api/agent-task.ts';
import type { AgentTaskStatus, Phase } from '../api/agent-task.ts';
import { clip, REVIEW_ENTRIES_MAX, REVIEW_FLAGGED_MAX, REVIEW_TEXT_MAX } from '../api/bounds.ts';
import { DEFAULT_PLAN_FILE, reviewCount } from '../api/review.ts';
import type { ReviewEvidence, ReviewStatus } from '../api/review.ts';
import { printable } from '../util/printable.ts';
import { normal } from './actions.ts';
import type { Events } from './actions.ts';

/** status.review after an episode that reported `facts`. */
export function foldReview(prev: ReviewStatus | undefined, facts: ReviewEvidence, episode: number): ReviewStatus {
  const flagged = (facts.flagged ?? []).map(safeText);
  const removed = new Set(facts.removed ?? []);
  const kept = (prev?.entries ?? []).filter((e) => !removed.has(e.digest));
  const known = new Set(kept.map((e) => e.digest));
  const added = (facts.added ?? [])
    .filter((e) => !known.has(e.digest))
    .map((e) => ({ file: e.file, text: safeText(e.text), digest: e.digest, episode }));
  const entries = [...kept, ...added];
  return {
    flagged: flagged.slice(0, REVIEW_FLAGGED_MAX),
    flaggedMore: (facts.flaggedMore ?? 0) + Math.max(0, flagged.length - REVIEW_FLAGGED_MAX),
    entries: entries.slice(0, REVIEW_ENTRIES_MAX),
    entriesMore: (prev?.entriesMore ?? 0) + (facts.addedMore ?? 0) + Math.max(0, entries.length - REVIEW_ENTRIES_MAX),
  };
}

/** ReviewItems, once, in the pass a task ends (any terminal phase, NeedsReview too) with items to review. */
export function reviewEvents(before: Phase | undefined, status: AgentTaskStatus, planFile?: string): Events {
  const review = status.review;
  const ended = isTerminal(status.phase) && before !== status.phase;
  if (!ended || !review || reviewCount(review) === 0) return [];
  return [normal('ReviewItems', reviewWords(review, planFile ?? DEFAULT_PLAN_FILE))];
}

/** "3 items need review: 1 [!] item in PLAN.md, 2 new entries in DISCOVERY.md / IDEAS.md". */
export function reviewWords(review: ReviewStatus, planFile: string): string {
  const total = reviewCount(review);
  const flagged = review.flagged.length + review.flaggedMore;
  const entries = review.entries.length + review.entriesMore;
  const parts: string[] = [];
  if (flagged > 0) parts.push(`${plural(flagged, '[!] item')} in ${planFile}`);
  if (entries > 0) parts.push(`${plural(entries, 'new entry', 'new entries')} in DISCOVERY.md / IDEAS.md`);
  return `${plural(total, 'item')} need${total === 1 ? 's' : ''} review: ${parts.join(', ')}`;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function safeText(text: string): string {
  return clip(printable(text, REVIEW_TEXT_MAX), REVIEW_TEXT_MAX);
}
