// One immutable record per finished episode: what it was, how it ended, what it cost and what it left
// behind. Locally a line of logs/NAMESPACE/NAME/episodes.jsonl; on a cluster an AgentEpisode object. This
// zod schema is the single source of truth for both, and for the AgentEpisode CRD.
import { z } from 'zod';
import { API_VERSION, HistorySchema, MetadataSchema, OUTCOMES, TokensSchema } from './agent-task.ts';
import type { LastEpisode } from './agent-task.ts';
import {
  clip,
  EPISODE_MESSAGE_MAX,
  OUTPUT_KEY_MAX,
  OUTPUT_VALUE_MAX_BYTES,
  OUTPUTS_MAX_KEYS,
  OUTPUTS_NOTE_MAX,
} from './bounds.ts';
import { GatewayMeteredSchema } from './episode-result.ts';
import type { EpisodeResult } from './episode-result.ts';
import { meterDisagreement } from './meter-disagreement.ts';
import { EvidenceSchema } from './leash.ts';
import { GateRunSchema } from './gates.ts';
import { OPS_LAST_EPISODE_FIELDS } from './ops-status.ts';
import { SandboxRunSchema } from './sandbox.ts';

// Outputs (api/outputs.ts), bounded as an episode publishes them: at most 16 keys of C identifiers.
const OUTPUTS_RECORD_FIELDS = {
  outputs: z
    .record(z.string().max(OUTPUT_KEY_MAX), z.string().max(OUTPUT_VALUE_MAX_BYTES))
    .optional()
    .meta({ maxProperties: OUTPUTS_MAX_KEYS })
    .describe('what the episode published (<output name="KEY"> or $EPISODIC_OUTPUTS)'),
  outputsNote: z
    .string()
    .max(OUTPUTS_NOTE_MAX)
    .optional()
    .describe('outputs dropped past their bounds, and output references its prompt rendered empty'),
};

export const EPISODE_KIND = 'AgentEpisode';
export const EPISODE_PLURAL = 'agentepisodes';
/** Kept per task on a cluster unless spec.history.keep says otherwise. */
export const DEFAULT_HISTORY_KEEP = HistorySchema.parse({}).keep;

// Every string is bounded: the CRD's `self == oldSelf` rule is costed by the longest value it may compare.
const timestamp = z.string().max(64);

/** Longest task reason a record keeps (a word such as PromiseDetected: cut, never marked). */
export const EPISODE_REASON_MAX = 128;

export const EpisodeRecordSchema = z.object({
  task: z.string().min(1).max(253),
  number: z.number().int().min(1),
  outcome: z.enum(OUTCOMES),
  reason: z
    .string()
    .max(EPISODE_REASON_MAX)
    .optional()
    .describe(
      "the task's reason right after this episode (PromiseDetected, Backoff, CircuitOpen…); none when the next one started at once",
    ),
  exitCode: z.number().int().nullable(),
  // Strings, not enums: a value added later must not make an older installed CRD refuse the record.
  errorClass: z
    .string()
    .max(32)
    .optional()
    .describe("how the agent's error was classified (transient, usageLimit, fatal…)"),
  completion: z
    .string()
    .max(32)
    .optional()
    .describe('the completion signal the agent gave, if any (promise, exitSignal…)'),
  startedAt: timestamp.optional(),
  finishedAt: timestamp.optional(),
  costUSD: z.number().nonnegative().default(0),
  tokens: TokensSchema.default(() => TokensSchema.parse({})),
  evidence: EvidenceSchema.optional(),
  completionScore: z
    .number()
    .int()
    .nonnegative()
    .max(1000)
    .optional()
    .describe('completion.signals: the score this episode reached'),
  completionSignals: z
    .array(z.string().max(32))
    .max(8)
    .optional()
    .describe('completion.signals: what scored, e.g. exitSignal+50'),
  message: z.string().max(EPISODE_MESSAGE_MAX).optional(),
  step: z.string().max(63).optional().describe('spec.steps: the step this episode ran in'),
  gates: z.array(GateRunSchema).max(8).optional().describe('spec.steps[].gates: the gates run after the agent'),
  ...OUTPUTS_RECORD_FIELDS,
  ...OPS_LAST_EPISODE_FIELDS,
  sandbox: SandboxRunSchema.optional().describe('spec.sandbox: network, how resources were bounded, a bound hit'),
  gateway: GatewayMeteredSchema.optional().describe(
    "what the model gateway metered (status and budgets count it); costUSD and tokens above are the agent's own report",
  ),
});

export type EpisodeRecord = z.infer<typeof EpisodeRecordSchema>;

/** The cluster object. The record is a field of its own: neither desired state (spec) nor observed (status). */
export const AgentEpisodeSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(EPISODE_KIND),
  metadata: MetadataSchema,
  record: EpisodeRecordSchema.meta({
    'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'an episode record is immutable' }],
  }),
});

export type AgentEpisode = z.infer<typeof AgentEpisodeSchema>;

/**
 * The record of the episode a status just recorded as `last`: the outcome and times as judged, the spend
 * and evidence as the executor observed them (there is no result for an episode that vanished).
 */
export function episodeRecordOf(
  task: string,
  last: LastEpisode,
  reason: string | undefined,
  result: EpisodeResult | undefined,
): EpisodeRecord {
  // What went missing of its outputs is named in the episode's message too (and whole in outputsNote).
  const said = last.message ?? result?.message;
  const note = result?.outputsNote;
  const message = note && said ? `${clip(said, EPISODE_MESSAGE_MAX - note.length - 3)} (${note})` : (note ?? said);
  return EpisodeRecordSchema.parse({
    task,
    number: last.number,
    outcome: last.outcome,
    reason: reason?.slice(0, EPISODE_REASON_MAX),
    exitCode: last.exitCode ?? null,
    errorClass: result && result.errorClass !== 'none' ? result.errorClass : undefined,
    completion: result?.completion,
    startedAt: last.startedAt,
    finishedAt: last.finishedAt,
    // Behind the gateway the status counted its meter; the record keeps the agent's own report beside it.
    costUSD: result?.gateway ? result.costUSD : (last.costUSD ?? result?.costUSD ?? 0),
    tokens: result?.tokens,
    evidence: result?.evidence,
    completionScore: last.completionScore,
    completionSignals: last.completionSignals,
    step: last.step,
    gates: result?.gates,
    ops: last.ops,
    opsRejected: last.opsRejected,
    message: message === undefined ? undefined : clip(message, EPISODE_MESSAGE_MAX),
    ...(result?.outputs ? { outputs: result.outputs } : {}),
    ...(result?.outputsNote ? { outputsNote: result.outputsNote } : {}),
    ...(result?.sandbox ? { sandbox: result.sandbox } : {}),
    ...(result?.gateway ? { gateway: gatewayWithNote(result) } : {}),
  });
}

/** What the episode counted for: the gateway's meter when it ran behind one, else the agent's own report. */
export function countedUSD(record: Pick<EpisodeRecord, 'costUSD' | 'gateway'>): number {
  return record.gateway?.costUSD ?? record.costUSD;
}

/** The gateway's figures, with a note when the agent's own report is far from them. */
function gatewayWithNote(result: EpisodeResult): EpisodeResult['gateway'] {
  const gateway = result.gateway;
  const note = gateway && meterDisagreement(result, gateway);
  return note && gateway ? { ...gateway, disagreement: note } : gateway;
}
