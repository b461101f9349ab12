// Best-of-N attempts (issue 32 §2): `spec.attempts` runs the task N times in parallel, each attempt a child
// task (TASK-attempt-N) with the task's own loop, completion rule and gates, on its own branch from the same
// commit; the winner is chosen by evidence (reconciler/attempts-select.ts) or by a judge episode.
import { z } from 'zod';

export const ATTEMPTS_MAX = 8;
/** Characters of the candidates' evidence a judge's prompt gets. */
export const JUDGE_EVIDENCE_MAX = 8 * 1024;

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

export const AttemptsStatusSchema = z.object({
  phase: z.enum(['Running', 'Judging', 'Chosen', 'NoneSucceeded']),
  candidates: z.array(AttemptStatusSchema).max(ATTEMPTS_MAX),
  winner: z.number().int().min(1).optional(),
  selectedBy: z.enum(['evidence', 'judge']).optional(),
  /** Why the judge's verdict was not used (missing or invalid), when evidence chose instead. */
  judgeFallback: z.string().optional(),
});
export type AttemptStatus = z.infer<typeof AttemptStatusSchema>;
export type AttemptsStatus = z.infer<typeof AttemptsStatusSchema>;
