// The AgentBudget contract (episodic.dev/v1alpha1): a spend limit over the AgentTasks its selector picks,
// in a rolling window or in total, checked before every episode. Like AgentTask, this zod schema is the
// one source of types, defaults, validation messages and the CRD.
import { z } from 'zod';
import { API_VERSION, MetadataSchema } from './agent-task.ts';
import { describeIssues } from './validate.ts';

export const BUDGET_KIND = 'AgentBudget';
export const BUDGET_PLURAL = 'agentbudgets';

export const WINDOWS = ['1h', '5h', '24h', '7d', 'total'] as const;
export type BudgetWindow = (typeof WINDOWS)[number];

const HOUR_MS = 3_600_000;
/** Length of each rolling window; `total` never rolls. */
export const WINDOW_MS: Record<BudgetWindow, number> = {
  '1h': HOUR_MS,
  '5h': 5 * HOUR_MS,
  '24h': 24 * HOUR_MS,
  '7d': 7 * 24 * HOUR_MS,
  total: Infinity,
};

export const LabelSelectorRequirementSchema = z.strictObject({
  key: z.string().min(1).max(317),
  operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
  values: z.array(z.string().max(63)).max(100).optional(),
});

export const LabelSelectorSchema = z
  .strictObject({
    matchLabels: z.record(z.string(), z.string()).optional(),
    matchExpressions: z.array(LabelSelectorRequirementSchema).max(50).optional(),
  })
  .describe('label selector over AgentTasks of the namespace; empty selects them all');

export const AgentBudgetSpecSchema = z
  .strictObject({
    selector: LabelSelectorSchema.default({}),
    limitUSD: z.number().positive().describe('spend allowed in the window (all selected tasks together)'),
    maxTokens: z.number().int().positive().optional().describe('input + output tokens allowed in the window'),
    maxEpisodesPerHour: z.number().int().positive().optional().describe('episode starts allowed in any rolling hour'),
    window: z.enum(WINDOWS).default('total').describe('rolling 1h, 5h, 24h or 7d; or total (never rolls)'),
  })
  .superRefine((spec, ctx) => {
    (spec.selector.matchExpressions ?? []).forEach((req, i) => {
      const path = ['selector', 'matchExpressions', i, 'values'];
      const needsValues = req.operator === 'In' || req.operator === 'NotIn';
      if (needsValues && !req.values?.length)
        ctx.addIssue({ code: 'custom', path, message: `${req.operator} needs at least one value` });
      if (!needsValues && req.values?.length)
        ctx.addIssue({ code: 'custom', path, message: `${req.operator} takes no values` });
    });
  });

// --- status -----------------------------------------------------------------------------------------

/** Spend of one slot of time: `last` is its newest entry, so the slot leaves the window at last + window. */
export const LedgerBucketSchema = z.object({
  start: z.string(),
  last: z.string(),
  usd: z.number().nonnegative().default(0),
  tokens: z.number().int().nonnegative().default(0),
  episodes: z.number().int().nonnegative().default(0),
});

/** What the budget has counted of one task so far: only growth beyond it is new spend. */
export const LedgerTaskSchema = z.object({
  task: z.string(),
  costUSD: z.number().nonnegative(),
  tokens: z.number().int().nonnegative(),
  episodes: z.number().int().nonnegative(),
});

export const BudgetLedgerSchema = z
  .object({
    buckets: z.array(LedgerBucketSchema).default([]),
    starts: z.array(LedgerBucketSchema).default([]).describe('episode starts of the last hour, by minute'),
    tasks: z.array(LedgerTaskSchema).default([]),
  })
  .describe('bounded spend per slot of time, so window spend survives a controller restart');

export const AgentBudgetStatusSchema = z.object({
  window: z.enum(WINDOWS).optional(),
  spentUSD: z.number().nonnegative().default(0),
  spentTokens: z.number().int().nonnegative().default(0),
  remainingUSD: z.number().nonnegative().optional(),
  remainingTokens: z.number().int().nonnegative().optional(),
  episodesLastHour: z.number().int().nonnegative().default(0),
  windowFreesAt: z.string().optional().describe('when the oldest spend in the window leaves it'),
  tasksHeld: z.number().int().nonnegative().default(0),
  heldTasks: z.array(z.string()).default([]).describe('names of held tasks (the first 20)'),
  message: z.string().optional(),
  updatedAt: z.string().optional(),
  observedGeneration: z.number().int().optional(),
  ledger: BudgetLedgerSchema.default(() => BudgetLedgerSchema.parse({})),
});

export const AgentBudgetSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(BUDGET_KIND),
  metadata: MetadataSchema,
  spec: AgentBudgetSpecSchema,
  status: AgentBudgetStatusSchema.optional(),
});

export type AgentBudgetSpec = z.infer<typeof AgentBudgetSpecSchema>;
export type AgentBudgetStatus = z.infer<typeof AgentBudgetStatusSchema>;
export type BudgetLedger = z.infer<typeof BudgetLedgerSchema>;
export type LedgerBucket = z.infer<typeof LedgerBucketSchema>;
export type LabelSelector = z.infer<typeof LabelSelectorSchema>;

export type BudgetValidation = { ok: true; spec: AgentBudgetSpec } | { ok: false; errors: string[] };

export function validateBudgetSpec(raw: unknown): BudgetValidation {
  const parsed = AgentBudgetSpecSchema.safeParse(raw ?? {});
  return parsed.success
    ? { ok: true, spec: parsed.data }
    : { ok: false, errors: describeIssues(parsed.error, 'spec', AgentBudgetSpecSchema) };
}

/** Kubernetes label-selector semantics: every matchLabels pair and every expression must hold. */
export function matchesSelector(selector: LabelSelector, labels: Readonly<Record<string, string>> = {}): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const req of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, req.key);
    const value = labels[req.key];
    const inValues = has && (req.values ?? []).includes(value);
    if (req.operator === 'In' && !inValues) return false;
    if (req.operator === 'NotIn' && inValues) return false;
    if (req.operator === 'Exists' && !has) return false;
    if (req.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}
