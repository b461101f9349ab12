// Pipelines: `skipWhen` on a step and `scope` on the task or a step (README "skipWhen", "Scope"). The schemas,
// and the facts an executor reports about them in an episode's result. The rules that judge those facts are
// pure (reconciler/scope.ts); the executor (a local process, or the runner in the pod) gathers the facts,
// since only it sees the workspace.
import { z } from 'zod';

const INSIDE = 'must be a relative path inside the workspace (no leading /, no ..)';
const workspacePath = z
  .string()
  .min(1)
  .max(1024)
  .refine((p) => !p.startsWith('/') && !/^[A-Za-z]:/.test(p) && !p.split(/[\\/]/).includes('..'), INSIDE)
  .describe('a path inside the workspace')
  .meta({
    'x-kubernetes-validations': [
      { rule: "!self.startsWith('/') && !self.matches('(^|/)[.][.](/|$)')", message: INSIDE },
    ],
  });
const SKIP_WHEN_RULE = 'exactly one of checklistPending or fileExists is required';

export const SkipWhenSchema = z
  .strictObject({
    checklistPending: workspacePath
      .optional()
      .describe('skip the step while this plan file exists and has pending [ ] or in-progress [~] items'),
    fileExists: workspacePath.optional().describe('skip the step while this path exists'),
  })
  .superRefine((s, ctx) => {
    if ((s.checklistPending === undefined) === (s.fileExists === undefined))
      ctx.addIssue({ code: 'custom', path: [], message: SKIP_WHEN_RULE });
  })
  .meta({
    'x-kubernetes-validations': [
      { rule: 'has(self.checklistPending) != has(self.fileExists)', message: SKIP_WHEN_RULE },
    ],
  })
  .describe('the step is recorded Skipped (SkipWhen) without an agent episode and the pipeline goes on');

export const SCOPE_ACTIONS = ['NeedsReview', 'Revert'] as const;

export const ScopeSchema = z
  .strictObject({
    paths: z
      .array(workspacePath.max(512))
      .min(1)
      .max(64)
      .describe('globs (picomatch) relative to the workspace: the paths an episode may change'),
    onViolation: z
      .enum(SCOPE_ACTIONS)
      .default('NeedsReview')
      .describe('NeedsReview (reason OutOfScope) or Revert: the paths are restored, the episode counts as no progress'),
  })
  .describe("the paths an episode may change; a step's scope replaces the task's");

export type SkipWhen = z.infer<typeof SkipWhenSchema>;
export type Scope = z.infer<typeof ScopeSchema>;

/** Paths named in a result (each cut to 100 characters); counts say how many there were. At most ~900 bytes of
 * the 4 KiB termination message. */
export const SCOPE_PATHS_REPORTED = 5;
export const SCOPE_UNRESTORED_REPORTED = 3;
export const REPORTED_PATH_MAX = 100;
const reportedPath = z.string().max(REPORTED_PATH_MAX);

// The facts of an episode's result about skipWhen and scope: one block, beside the other result fields.
export const PipelineResultFields = {
  /** The executor found the step's skipWhen true and started no agent. */
  skipped: z.strictObject({ reason: z.literal('SkipWhen') }).optional(),
  /** Paths the episode changed outside its scope, and what was done about them. */
  scope: z
    .strictObject({
      onViolation: z.enum(SCOPE_ACTIONS),
      count: z.number().int().nonnegative(),
      paths: z.array(reportedPath).max(SCOPE_PATHS_REPORTED),
      /** Revert: how many were restored; the rest are named in `unrestored`. */
      reverted: z.number().int().nonnegative().default(0),
      unrestored: z.array(reportedPath).max(SCOPE_UNRESTORED_REPORTED).optional(),
      unrestoredCount: z.number().int().nonnegative().optional(),
    })
    .optional(),
};
