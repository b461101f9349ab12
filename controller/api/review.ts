// What needs a person (issue 19 §6, RalphSharp's post-execution review): the facts an episode reports about
// the plan file's `[!]` items and the entries of DISCOVERY.md and IDEAS.md, and status.review, which the
// reconciler keeps from them (reconciler/review.ts). Item text is agent text: bounded and printable.
import { z } from 'zod';
import { REVIEW_ENTRIES_MAX, REVIEW_FLAGGED_MAX, REVIEW_REMOVED_MAX, REVIEW_TEXT_MAX } from './bounds.ts';

/** The files whose new entries need a person's eye, at the workspace's root. */
export const REVIEW_FILES = ['DISCOVERY.md', 'IDEAS.md'] as const;
/** The plan file read for `[!]` items when spec.progress.checklist names none. */
export const DEFAULT_PLAN_FILE = 'PLAN.md';

const count = z.number().int().nonnegative();
/** A short hex digest of an entry's normalised text: "the same entry" across episodes. */
const digest = z
  .string()
  .max(16)
  .regex(/^[0-9a-f]{1,16}$/);
const text = z.string().max(REVIEW_TEXT_MAX);

export const ReviewEntrySchema = z.object({
  file: z.enum(REVIEW_FILES),
  text,
  digest,
});

/** What one episode saw, gathered by the executor (locally) or the runner (in the pod). Empty fields are left
 * out: this travels in the pod's termination message. */
export const ReviewEvidenceSchema = z.object({
  /** The plan file's `[!]` items after the episode (all of them: they need review whoever marked them). */
  flagged: z.array(text).max(REVIEW_FLAGGED_MAX).optional(),
  /** Entries present after the episode and not before it. */
  added: z.array(ReviewEntrySchema).max(REVIEW_ENTRIES_MAX).optional(),
  /** Digests of entries present before the episode and gone after it. */
  removed: z.array(digest).max(REVIEW_REMOVED_MAX).optional(),
  /** Items left out to stay in the evidence's byte budget. */
  flaggedMore: count.optional(),
  addedMore: count.optional(),
});

export const ReviewStatusSchema = z.object({
  flagged: z
    .array(text)
    .max(REVIEW_FLAGGED_MAX)
    .default([])
    .describe("the plan file's [!] items, as of the last episode"),
  flaggedMore: count.default(0).describe('[!] items past the cap'),
  entries: z
    .array(ReviewEntrySchema.extend({ episode: z.number().int().min(1) }))
    .max(REVIEW_ENTRIES_MAX)
    .default([])
    .describe('entries of DISCOVERY.md and IDEAS.md added since the task started, oldest first'),
  entriesMore: count.default(0).describe('new entries past the cap'),
});

export type ReviewEntry = z.infer<typeof ReviewEntrySchema>;
export type ReviewEvidence = z.infer<typeof ReviewEvidenceSchema>;
export type ReviewStatus = z.infer<typeof ReviewStatusSchema>;

/** How many items need a person: listed and counted past the caps. */
export function reviewCount(review: ReviewStatus | undefined): number {
  if (!review) return 0;
  return review.flagged.length + review.flaggedMore + review.entries.length + review.entriesMore;
}

/** The facts with their items turned into counts (and removed digests kept): when even they must give way. */
export function reviewCountsOnly(review: ReviewEvidence): ReviewEvidence {
  const flagged = (review.flagged?.length ?? 0) + (review.flaggedMore ?? 0);
  const added = (review.added?.length ?? 0) + (review.addedMore ?? 0);
  return {
    ...(review.removed?.length ? { removed: review.removed } : {}),
    ...(flagged > 0 ? { flaggedMore: flagged } : {}),
    ...(added > 0 ? { addedMore: added } : {}),
  };
}
