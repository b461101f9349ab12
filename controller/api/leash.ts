// The leash's part of the AgentTask contract: what an episode's evidence looks like, the circuit breaker's
// settings and state, and the task's checklist progress. Zod, like the rest of the API: types, defaults,
// validation messages and the CRD come from here.
import { z } from 'zod';
import { ReviewEvidenceSchema } from './review.ts';

const count = z.number().int().nonnegative();

/** How many changed paths an episode's evidence keeps, and how long each may be (bounded: agent-made names). */
export const FILES_MAX = 50;
export const FILE_PATH_MAX = 300;

/** Markdown checkboxes ([ ] [~] [x] [!] [S]) or prd.json stories, counted. */
export const ChecklistCountsSchema = z.object({
  done: count.default(0),
  total: count.default(0),
  inProgress: count.default(0),
  failed: count.default(0),
  skipped: count.default(0),
});

/** status.progress: the counts, and "done/total" for the Progress printer column (JSONPath cannot join). */
export const ProgressStatusSchema = ChecklistCountsSchema.extend({
  summary: z.string().max(32).optional().describe('items done or skipped / all items, e.g. 7/12'),
});

/** What the executor saw of the workspace across one episode. */
export const WorkspaceEvidenceSchema = z.object({
  kind: z.enum(['git', 'directory']),
  changed: z.boolean().describe('the tree or HEAD differs from before the episode'),
  headBefore: z.string().max(64).optional(),
  headAfter: z.string().max(64).optional(),
  /** The checkpoint: the commit episodic made of what the episode left (git workspaces that changed). */
  commit: z.string().max(64).optional(),
  filesChanged: count.optional(),
  /** The first FILES_MAX paths it changed (filesChanged counts them all), as git printed them. */
  files: z.array(z.string().max(FILE_PATH_MAX)).max(FILES_MAX).optional(),
  insertions: count.optional(),
  deletions: count.optional(),
  /** git: uncommitted changes are left after the episode. */
  dirty: z.boolean().optional(),
  /** directory: the walk stopped at its cap; changes past it may be missed. */
  truncated: z.boolean().optional(),
});

/** RALPH_STATUS block fields, as the agent printed them. */
export const RalphStatusSchema = z.object({
  status: z.string().max(64).optional(),
  exitSignal: z.boolean().optional(),
  tasksCompleted: count.optional(),
  filesModified: count.optional(),
  testsStatus: z.string().max(64).optional(),
  workType: z.string().max(64).optional(),
});

export const EvidenceSchema = z.object({
  workspace: WorkspaceEvidenceSchema.optional(),
  checklist: ChecklistCountsSchema.optional(),
  /** The last error with numbers, paths and ids stripped: "the same error again" is the same string. */
  errorFingerprint: z.string().max(200).optional(),
  ralph: RalphStatusSchema.optional(),
  /** Completion keywords found in the final answer (only with completion.signals). */
  completionKeywords: z.array(z.string().max(32)).max(8).optional(),
  /** What needs a person: the plan file's [!] items, DISCOVERY.md / IDEAS.md entries added (api/review.ts). */
  review: ReviewEvidenceSchema.optional(),
});

export const ProgressSpecSchema = z.strictObject({
  checklist: z
    .string()
    .min(1)
    .optional()
    .describe('plan file inside the workspace: Markdown checkboxes or a Ralph prd.json'),
});

export const BreakerSpecSchema = z.strictObject({
  noProgressEpisodes: count.default(5).describe('episodes in a row without progress → HalfOpen (0: off)'),
  halfOpenEpisodes: count.default(3).describe('more episodes without progress in HalfOpen → Open (0: open at once)'),
  sameErrorEpisodes: count.default(5).describe('the same error this many episodes in a row → Open (0: off)'),
});

export const BREAKER_STATES = ['Closed', 'HalfOpen', 'Open'] as const;

export const BreakerStatusSchema = z.object({
  state: z.enum(BREAKER_STATES).default('Closed'),
  /** Counted episodes in a row without progress. */
  noProgress: count.default(0),
  /** Counted episodes without progress since the breaker went HalfOpen. */
  halfOpen: count.default(0),
  /** Episodes in a row that ended with lastErrorFingerprint. */
  sameError: count.default(0),
  lastErrorFingerprint: z.string().max(200).optional(),
  lastProgressAt: z.string().optional(),
  /** Why it is (or last was) open. */
  trippedBy: z.enum(['noProgress', 'sameError']).optional(),
});

export type ChecklistCounts = z.infer<typeof ChecklistCountsSchema>;
export type ProgressStatus = z.infer<typeof ProgressStatusSchema>;
export type WorkspaceEvidence = z.infer<typeof WorkspaceEvidenceSchema>;
export type Evidence = z.infer<typeof EvidenceSchema>;
export type RalphStatus = z.infer<typeof RalphStatusSchema>;
export type BreakerSpec = z.infer<typeof BreakerSpecSchema>;
export type BreakerStatus = z.infer<typeof BreakerStatusSchema>;
