// Best-of-N attempts (issue 32 §2): `spec.attempts` runs the task N times in parallel, each attempt a child
// task (TASK-attempt-N) with the task's own loop, completion rule and gates, on its own branch from the same
// commit; the winner is chosen by evidence (reconciler/attempts-select.ts) or by a judge episode.
import { z } from 'zod';

export const ATTEMPTS_MAX = 8;
/** Characters of the candidates' evidence a judge's prompt gets. */
export const JUDGE_EVIDENCE_MAX = 8 * 1024;
/** Characters of each candidate's diff (against the commit the attempts started from) a judge's prompt gets. */
export const JUDGE_DIFF_MAX = 4 * 1024;

export const AttemptsSchema = z
  .strictObject({
    count: z.number().int().min(2).max(ATTEMPTS_MAX).describe('attempts run in parallel, each on its own branch'),
    select: z
      .enum(['evidence', 'judge'])
      .default('evidence')
      .describe(
        'evidence: succeeded > gates passed > inside scope > fewer changed lines > lower cost > earlier finish; judge: an episode writes the output winner',
      ),
    judge: z
      .strictObject({
        prompt: z
          .string()
          .min(1)
          .describe('{{attempts}} is each candidate with its evidence; write <output name="winner">N</output>'),
        agent: z
          .strictObject({ command: z.array(z.string().min(1)).min(1).max(64).optional() })
          .optional()
          .describe("the judge's command (default: the task's agent)"),
      })
      .optional(),
    keepLosers: z
      .boolean()
      .default(false)
      .describe("keep the losing attempts' branches on the remote (default: deleted once the winner is the task's)"),
  })
  .describe('best-of-N: N attempts of the task in parallel, the best one is its result');

export type Attempts = z.infer<typeof AttemptsSchema>;

/** What status.attempts keeps of one attempt. */
export const AttemptStatusSchema = z.object({
  number: z.number().int().min(1),
  task: z.string(),
  branch: z.string().optional(),
  phase: z.string().optional(),
  gatesPassed: z.boolean().optional(),
  insideScope: z.boolean().optional(),
  changedLines: z.number().int().nonnegative().optional(),
  costUSD: z.number().nonnegative().default(0),
  finishedAt: z.string().optional(),
});

/** The winner's branch made the task's own (its workspace ref fast-forwarded to it), and what became of the losers'. */
export const AdoptedSchema = z.object({
  into: z.string(),
  commit: z.string().optional(),
  deletedBranches: z.array(z.string()).max(ATTEMPTS_MAX).default([]),
  keptBranches: z.array(z.string()).max(ATTEMPTS_MAX).default([]),
});

export const AttemptsStatusSchema = z.object({
  /** Adopting: the winner is chosen and its branch is being made the task's (the loop's AdoptWinner). */
  phase: z.enum(['Running', 'Judging', 'Adopting', 'Chosen', 'NoneSucceeded']),
  candidates: z.array(AttemptStatusSchema).max(ATTEMPTS_MAX),
  winner: z.number().int().min(1).optional(),
  selectedBy: z.enum(['evidence', 'judge']).optional(),
  /** Why the judge's verdict was not used (missing or invalid), when evidence chose instead. */
  judgeFallback: z.string().optional(),
  adopted: AdoptedSchema.optional(),
});
export type AttemptStatus = z.infer<typeof AttemptStatusSchema>;
export type AttemptsStatus = z.infer<typeof AttemptsStatusSchema>;
export type Adopted = z.infer<typeof AdoptedSchema>;

/** What the loop reports of an AdoptWinner it carried out (in memory: a restart carries it out again). */
export type AdoptOutcome = { winner: number; from: string } & (
  | { ok: true; adopted: Adopted }
  | { ok: false; message: string }
);
