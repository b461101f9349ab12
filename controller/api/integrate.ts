// spec.integrate (issue 32 §3): a task that succeeds on a branch enters a named merge queue, which rebases it
// onto `into`, runs the queue's gates and fast-forwards `into`. The spec schema, the queue's status on a task,
// and the bounds both share. The queue's rules are reconciler/merge-queue.ts; its loop core/merge-queue-loop.ts.
import { z } from 'zod';
import { GATE_OUTPUT_MAX, LINE_MAX } from './bounds.ts';
import { gateSchema, GATES_MAX } from './gates.ts';

export const INTEGRATE_EPISODES_MAX = 10;
/** Conflicting files named in status and in {{integrate.conflicts}}. */
export const CONFLICT_FILES_MAX = 32;
export const DEFAULT_CONFLICT_EPISODES = 1;
const QUEUE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Why `into` cannot be the branch the task works on: the queue would rebase a branch onto itself. */
export const INTO_OWN_REF = 'must differ from workspace.git.ref';

/** Whether two branch names (refs/heads/ optional) are the same branch. */
export function sameBranch(a: string, b: string): boolean {
  return a.replace(/^refs\/heads\//, '') === b.replace(/^refs\/heads\//, '');
}

export function integrateSchema(name: z.ZodString, branch: z.ZodType<string>) {
  const gates = z
    .array(gateSchema(name))
    .max(GATES_MAX)
    .default([])
    .describe('run after the rebase, in the rebased tree; a failing check starts a resolution episode');
  return z.strictObject({
    into: branch.describe('the branch the queue fast-forwards (on the workspace remote)'),
    queue: z
      .string()
      .min(1)
      .max(63)
      .regex(QUEUE_NAME, 'must be a lowercase RFC 1123 label (a-z, 0-9, "-")')
      .describe('tasks naming the same queue integrate one at a time, oldest first'),
    gates,
    onConflict: z
      .strictObject({
        episodes: z
          .number()
          .int()
          .min(0)
          .max(INTEGRATE_EPISODES_MAX)
          .default(DEFAULT_CONFLICT_EPISODES)
          .describe('resolution episodes (the same agent, {{integrate.conflicts}}) before NeedsReview'),
      })
      .default({ episodes: DEFAULT_CONFLICT_EPISODES }),
  });
}

export const INTEGRATE_RESULTS = [
  'queued',
  'integrating',
  'integrated',
  'conflict',
  'gateFailed',
  'needsReview',
] as const;

export const IntegrateStatusSchema = z.object({
  queue: z.string(),
  result: z.enum(INTEGRATE_RESULTS).describe('the last thing the queue did with this task'),
  position: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe('0: integrating now; n: n tasks ahead when it entered the queue (at)'),
  attempts: z.number().int().nonnegative().default(0).describe('rebases tried'),
  episodes: z.number().int().nonnegative().default(0).describe('resolution episodes run'),
  conflicts: z.array(z.string().max(300)).max(CONFLICT_FILES_MAX).optional().describe('files that conflicted last'),
  gate: z.string().max(63).optional().describe('the queue gate that failed last'),
  output: z.string().max(GATE_OUTPUT_MAX).optional().describe("the failing gate's output tail"),
  commit: z.string().max(64).optional().describe('the commit `into` was fast-forwarded to'),
  pullRequest: z
    .number()
    .int()
    .positive()
    .optional()
    .describe("the task's pull request, merged through the forge's API (or refused)"),
  forge: z.string().max(LINE_MAX).optional().describe("the forge's answer when it refused to merge the pull request"),
  at: z.string().optional().describe('when result was recorded'),
});

export type IntegrateStatus = z.infer<typeof IntegrateStatusSchema>;
