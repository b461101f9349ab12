// What an executor reports about one finished episode. Facts only: the reconciler turns them into an
// outcome. In cluster mode this travels as compact JSON through the pod's termination message (≤ 4 KiB).
import { z } from 'zod';
import { clip, EPISODE_MESSAGE_MAX } from './bounds.ts';
import { EvidenceSchema } from './leash.ts';
import { OpSchema, RejectedOpSchema } from './ops.ts';
import { GateRunSchema } from './gates.ts';
import { PipelineResultFields } from './scope.ts';
import { OUTPUTS_NOTE_MAX } from './bounds.ts';
import { SandboxRunSchema } from './sandbox.ts';

// Outputs (api/outputs.ts): what the episode published, bounded, and what of it (or of its prompt's output
// references) went missing. Kept apart so other result fields can be added beside it without conflicts.
const OUTPUTS_RESULT_FIELDS = {
  outputs: z.record(z.string(), z.string()).optional(),
  outputsNote: z.string().max(OUTPUTS_NOTE_MAX).optional(),
};

/** What the model gateway metered of the episode (issue 29): the figure status and budgets count when present. */
export const GatewayMeteredSchema = z.object({
  requests: z.number().int().nonnegative(),
  tokens: z.object({
    input: z.number().int().nonnegative(),
    output: z.number().int().nonnegative(),
    cacheRead: z.number().int().nonnegative(),
    cacheWrite: z.number().int().nonnegative(),
  }),
  costUSD: z.number().nonnegative(),
  /** The gateway refused a request for lack of budget: which budget, in its words. */
  refused: z.string().max(EPISODE_MESSAGE_MAX).optional(),
  /** In the record: the agent's own report and this are far apart (api/meter-disagreement.ts). */
  disagreement: z.string().max(EPISODE_MESSAGE_MAX).optional(),
});
export type GatewayMetered = z.infer<typeof GatewayMeteredSchema>;

// contextTooLong: the request did not fit the model's context window. Its own class because what it means
// is the spec's choice (completion.contextTooLong): fatal by default, or an ordinary failure.
export const ERROR_CLASSES = ['none', 'transient', 'usageLimit', 'fatal', 'contextTooLong'] as const;
export type ErrorClass = (typeof ERROR_CLASSES)[number];

export const OUTPUT_FORMATS = ['claude', 'codex', 'gemini', 'text'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export const EpisodeResultSchema = z.object({
  /** Process exit code; null when killed by a signal or never started. */
  exitCode: z.number().int().nullable(),
  signal: z.string().optional(),
  /** Killed because episodeTimeoutSeconds elapsed. */
  timedOut: z.boolean().default(false),
  /** Stopped on purpose (task suspended or deleted). */
  cancelled: z.boolean().default(false),
  /** The controller died mid-episode; found on restart. */
  interrupted: z.boolean().default(false),
  /** Which output format was recognised. */
  format: z.enum(OUTPUT_FORMATS).default('text'),
  /** The agent itself reported an error (claude is_error, codex turn.failed, gemini error/status). */
  agentError: z.boolean().default(false),
  errorClass: z.enum(ERROR_CLASSES).default('none'),
  /** Usage limits: when the agent may run again (RFC 3339). */
  resetAt: z.string().optional(),
  /** A completion signal in the final output: the promise sentinel or RALPH_STATUS EXIT_SIGNAL: true. */
  completion: z.enum(['promise', 'exitSignal']).optional(),
  costUSD: z.number().nonnegative().default(0),
  tokens: z
    .object({
      input: z.number().int().nonnegative().default(0),
      output: z.number().int().nonnegative().default(0),
      cacheRead: z.number().int().nonnegative().default(0),
      cacheWrite: z.number().int().nonnegative().default(0),
    })
    .default({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }),
  /** The verify command's exit code, when it ran (only after a completion signal). */
  verifyExitCode: z.number().int().nullable().optional(),
  /** One short line for humans: the error, or the tail of the agent's final message. */
  message: z.string().max(EPISODE_MESSAGE_MAX).optional(),
  durationMs: z.number().nonnegative().optional(),
  /** What the episode changed and left behind (workspace, checklist, error fingerprint, RALPH_STATUS). */
  evidence: EvidenceSchema.optional(),
  // Agent ops ($EPISODIC_OPS, api/ops.ts): what the episode asked of the controller, and the lines refused.
  ops: z.array(OpSchema).optional(),
  opsRejected: z.array(RejectedOpSchema).optional(),
  /** spec.steps[].gates: each gate that ran after the agent, in order (none after one whose check failed). */
  gates: z.array(GateRunSchema).max(8).optional(),
  // skipWhen and scope: what the executor found and did (api/scope.ts).
  ...PipelineResultFields,
  ...OUTPUTS_RESULT_FIELDS,
  /** spec.sandbox: how the episode was confined, and a resource bound it hit. */
  sandbox: SandboxRunSchema.optional(),
  gateway: GatewayMeteredSchema.optional(),
});

export type EpisodeResult = z.infer<typeof EpisodeResultSchema>;
export type EpisodeResultInput = z.input<typeof EpisodeResultSchema>;

/** A result from facts; the message is cut to fit here, where it is made, so no caller can trip over it. */
export function episodeResult(partial: EpisodeResultInput): EpisodeResult {
  const message = partial.message;
  const fitted = message === undefined ? undefined : clip(message, EPISODE_MESSAGE_MAX);
  return EpisodeResultSchema.parse(fitted === message ? partial : { ...partial, message: fitted });
}

/** What the episode spent as status and budgets count it: the gateway's meter when it ran behind one, else the agent's report. */
export function spentBy(result: EpisodeResult): { costUSD: number; tokens: EpisodeResult['tokens'] } {
  return result.gateway ? { costUSD: result.gateway.costUSD, tokens: result.gateway.tokens } : result;
}
