// The status half of the AgentTask contract (episodic.dev/v1alpha1): phases, outcomes and what the controller
// records about a task. agent-task.ts re-exports all of it, so importers keep one home for the contract.
import { AttemptsStatusSchema } from './attempts.ts';
import { z } from 'zod';
import { BreakerStatusSchema, ProgressStatusSchema } from './leash.ts';
import { AuditEntrySchema, ResumeStatusSchema } from './resume.ts';
import { SPAWN_STATUS_FIELDS } from './spawn-fields.ts';
import { GateStateSchema } from './gates.ts';
import { OPS_LAST_EPISODE_FIELDS, OPS_STATUS_FIELDS } from './ops-status.ts';
import { ReviewStatusSchema } from './review.ts';
import { IntegrateStatusSchema } from './integrate.ts';

export const PHASES = [
  'Pending',
  'Running',
  'Waiting',
  'Succeeded',
  'Failed',
  'Skipped',
  'NeedsReview',
  'Suspended',
] as const;
export const TERMINAL_PHASES = ['Succeeded', 'Failed', 'Skipped', 'NeedsReview'] as const;
export const OUTCOMES = [
  'succeeded',
  'continue',
  'failed',
  'transient',
  'usageLimit',
  'fatal',
  'timeout',
  'cancelled',
  'interrupted',
  // a step's skipWhen held: the executor started no agent (README "skipWhen")
  'skipped',
] as const;

export const TokensSchema = z.object({
  input: z.number().int().nonnegative().default(0),
  output: z.number().int().nonnegative().default(0),
  cacheRead: z.number().int().nonnegative().default(0),
  cacheWrite: z.number().int().nonnegative().default(0),
});

export const LastEpisodeSchema = z.object({
  number: z.number().int(),
  outcome: z.enum(OUTCOMES),
  exitCode: z.number().int().nullable().optional(),
  startedAt: z.string().optional(),
  finishedAt: z.string().optional(),
  costUSD: z.number().optional(),
  message: z.string().optional(),
  completionScore: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe('completion.signals: the score this episode reached'),
  completionSignals: z
    .array(z.string())
    .optional()
    .describe('completion.signals: the signals that scored, e.g. exitSignal+50'),
  step: z.string().optional().describe('spec.steps: the step the episode ran in'),
  ...OPS_LAST_EPISODE_FIELDS,
});

export const CurrentEpisodeSchema = z.object({
  number: z.number().int(),
  startedAt: z.string(),
  podName: z.string().optional().describe('cluster mode'),
});

export const ConditionSchema = z.object({
  type: z.string(),
  status: z.enum(['True', 'False', 'Unknown']),
  observedGeneration: z.number().int().optional(),
  lastTransitionTime: z.string(),
  reason: z.string(),
  message: z.string(),
});

/** Outputs on a status: key → latest value (api/outputs.ts mergeOutputs bounds them). */
const OutputsStatusSchema = z.record(z.string(), z.string());

export const StepRefSchema = z.object({
  index: z.number().int().min(1).describe('1-based'),
  name: z.string(),
  summary: z.string().optional().describe('"2/4 implement", for the Step column'),
  generation: z.number().int().optional().describe('the spec generation whose steps status.steps follows'),
});

export const StepStatusSchema = z.object({
  name: z.string(),
  phase: z.enum(PHASES),
  reason: z.string().optional(),
  episodes: z.number().int().nonnegative().default(0).describe('episodes of this step (the task counts all)'),
  retries: z.number().int().nonnegative().default(0).describe('transient retries and usage limits of this step'),
  costUSD: z.number().nonnegative().default(0),
  startedAt: z.string().optional(),
  finishedAt: z.string().optional(),
  digest: z.string().optional().describe("the step's definition when it ran: an edited step restarts"),
  grantBase: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe('resume.grantedEpisodes when the step started: later grants add to its maxEpisodes'),
  gate: GateStateSchema.optional().describe('spec.steps[].gates: the step runs fix episodes for this gate'),
  outputs: OutputsStatusSchema.optional().describe("the latest value of each output this step's episodes published"),
  forEach: z
    .object({
      total: z.number().int().nonnegative(),
      created: z.number().int().nonnegative().describe('children made so far: items 0 to created-1'),
      running: z.number().int().nonnegative(),
      succeeded: z.number().int().nonnegative(),
      failed: z.number().int().nonnegative(),
    })
    .optional()
    .describe('a forEach step: how its items stand'),
  items: z
    .string()
    .optional()
    .describe('a forEach step: {{steps.NAME.items}}, a JSON array of phase and outputs per item'),
});

export const AgentTaskStatusSchema = z.object({
  phase: z.enum(PHASES).optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
  episodes: z.number().int().nonnegative().default(0).describe('episodes that ran an agent'),
  skippedSteps: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe('spec.steps: skipWhen checks that started no agent; each used an episode number, none is in episodes'),
  retries: z.number().int().nonnegative().default(0),
  consecutiveFailures: z.number().int().nonnegative().default(0),
  consecutiveRetries: z.number().int().nonnegative().default(0).describe('drives the transient backoff exponent'),
  costUSD: z.number().nonnegative().default(0),
  tokens: TokensSchema.default(() => TokensSchema.parse({})),
  currentEpisode: CurrentEpisodeSchema.optional(),
  lastEpisode: LastEpisodeSchema.optional(),
  nextEpisodeAt: z.string().optional(),
  conditions: z.array(ConditionSchema).default([]),
  observedGeneration: z.number().int().optional(),
  progress: ProgressStatusSchema.optional().describe('the checklist of progress.checklist, as of the last episode'),
  breaker: BreakerStatusSchema.optional(),
  workspaceChanges: z
    .number()
    .int()
    .nonnegative()
    .default(0)
    .describe('episodes since the task (re)opened that changed the workspace'),
  testOnlyEpisodes: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe(
      'completion.signals: episodes in a row that only ran tests (RALPH_STATUS WORK_TYPE TESTING, workspace unchanged)',
    ),
  resume: ResumeStatusSchema.optional(),
  audit: z.array(AuditEntrySchema).optional().describe('the last stop and resume decisions, oldest first'),
  step: StepRefSchema.optional().describe('spec.steps: the step the task is in'),
  steps: z.array(StepStatusSchema).optional().describe('spec.steps: one entry per step, in order'),
  outputs: OutputsStatusSchema.optional().describe(
    'the latest value of each output the episodes published; {{tasks.NAME.outputs.KEY}} in dependents',
  ),
  ...OPS_STATUS_FIELDS,
  // What needs a person (issue 19 §6): kept from each episode's evidence by reconciler/review.ts.
  integrate: IntegrateStatusSchema.optional().describe('spec.integrate: where the task is in its merge queue'),
  review: ReviewStatusSchema.optional().describe('what needs a person: [!] items, new DISCOVERY.md / IDEAS.md entries'),
  ...SPAWN_STATUS_FIELDS,
  // Evidence totals best-of-N compares attempts by (reconciler/attempts-select.ts).
  changedLines: z.number().int().nonnegative().optional().describe('lines inserted and deleted over all episodes'),
  outOfScopeEpisodes: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe('episodes that changed paths outside the scope'),
  attempts: AttemptsStatusSchema.optional().describe('spec.attempts: each attempt with its evidence, cost and branch'),
  credentials: z
    .object({ name: z.string(), namespaceDefault: z.boolean().optional() })
    .optional()
    .describe(
      'the AgentCredentials (gateway) the last episode started through; namespaceDefault: the namespace default chose it',
    ),
});

export type AgentTaskStatus = z.infer<typeof AgentTaskStatusSchema>;
export type Phase = (typeof PHASES)[number];
export type Outcome = (typeof OUTCOMES)[number];
export type Tokens = z.infer<typeof TokensSchema>;
export type CredentialsUsed = NonNullable<AgentTaskStatus['credentials']>;
export type Condition = z.infer<typeof ConditionSchema>;
export type LastEpisode = z.infer<typeof LastEpisodeSchema>;
export type StepStatus = z.infer<typeof StepStatusSchema>;

export function isTerminal(phase: Phase | undefined): boolean {
  return phase !== undefined && (TERMINAL_PHASES as readonly string[]).includes(phase);
}

/** Episode numbers given out so far: every episode's, and every skipWhen check's (the next one is this + 1). */
export function episodeNumbersUsed(status: AgentTaskStatus): number {
  return status.episodes + (status.skippedSteps ?? 0);
}

export function emptyStatus(): AgentTaskStatus {
  return AgentTaskStatusSchema.parse({});
}
