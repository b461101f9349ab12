// Pipelines (spec.steps): the schema of a step and what a step means for an episode. A step's agent,
// completion and limits are merged onto the task's, so everything that starts or judges an episode asks
// effectiveSpec() and never reads spec.agent/completion/limits of a task with steps directly.
// Only `import type` from agent-task.ts: agent-task.ts builds its step schema with stepSchema() below.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ScopeSchema, SkipWhenSchema } from './scope.ts';
import type { AgentTaskSpec, AgentTaskStatus } from './agent-task.ts';
import { duplicateGateNames, GATES_MAX, gateSchema } from './gates.ts';
import type { Gate, GateState } from './gates.ts';

export const STEPS_MAX = 32;
/** Limits a step may set; maxCostUSD and maxTokens are the task's, over all its steps. */
export const STEP_LIMIT_FIELDS = ['maxEpisodes', 'episodeTimeoutSeconds', 'maxConsecutiveFailures'] as const;

type Shape = z.core.$ZodShape;
type NoDefault<T> = T extends z.ZodDefault<infer Inner> ? Inner : T;
type Overrides<T extends Shape> = { [K in keyof T]: z.ZodOptional<NoDefault<T[K]>> };

/** Every field optional and without its default: a step's unset field means "the task's". */
function overrides<T extends Shape>(shape: T): Overrides<T> {
  const out: Record<string, z.ZodType> = {};
  for (const [key, field] of Object.entries(shape)) {
    const inner = field instanceof z.ZodDefault ? (field.unwrap() as z.ZodType) : (field as z.ZodType);
    out[key] = inner instanceof z.ZodOptional ? inner : inner.optional();
  }
  return out as Overrides<T>;
}

/** For LimitsSchema.pick(): the limits a step may set. */
export const STEP_LIMITS_MASK = {
  maxEpisodes: true,
  episodeTimeoutSeconds: true,
  maxConsecutiveFailures: true,
} as const;

const PROMPT_RULE = 'exactly one of prompt or promptFile is required';

/** The schema of one entry of spec.steps, from the task's own agent/completion/limits (STEP_LIMITS_MASK) schemas. */
export function stepSchema<A extends Shape, C extends Shape, L extends Shape>(parts: {
  name: z.ZodString;
  agent: z.ZodObject<A>;
  completion: z.ZodObject<C>;
  limits: z.ZodObject<L>;
}) {
  const limits = parts.limits.shape;
  return z
    .strictObject({
      name: parts.name.describe('unique in the task; EPISODIC_STEP and {{step.name}} in its episodes'),
      prompt: z.string().min(1).optional(),
      promptFile: z.string().min(1).optional().describe('path inside the workspace'),
      agent: z
        .strictObject(overrides(parts.agent.shape))
        .optional()
        .describe("merged onto spec.agent: a field set here replaces the task's; env entries by name"),
      completion: z
        .strictObject(overrides(parts.completion.shape))
        .optional()
        .describe("merged onto spec.completion: a field set here replaces the task's"),
      limits: z
        .strictObject(overrides(limits))
        .optional()
        .describe("per step, each defaulting to the task's; maxCostUSD and maxTokens stay the task's, over all steps"),
      // Gates (api/gates.ts): checks after the step's completion rule is met.
      gates: z
        .array(gateSchema(parts.name))
        .max(GATES_MAX)
        .optional()
        .describe('run in order once the completion rule is met; a failing check starts fix episodes')
        .meta({
          'x-kubernetes-validations': [
            {
              rule: 'self.all(g, self.exists_one(h, h.name == g.name))',
              message: 'gate names must be unique in a step',
            },
          ],
        }),
      // skipWhen and scope (README "skipWhen", "Scope").
      skipWhen: SkipWhenSchema.optional(),
      scope: ScopeSchema.optional().describe("replaces the task's scope for this step's episodes"),
    })
    .superRefine((step, ctx) => {
      if ((step.prompt === undefined) === (step.promptFile === undefined))
        ctx.addIssue({ code: 'custom', path: ['prompt'], message: PROMPT_RULE });
      for (const dup of duplicateGateNames(step.gates ?? []))
        ctx.addIssue({ code: 'custom', path: ['gates', dup.index, 'name'], message: dup.message });
    })
    .meta({ 'x-kubernetes-validations': [{ rule: 'has(self.prompt) != has(self.promptFile)', message: PROMPT_RULE }] });
}

export type Step = NonNullable<AgentTaskSpec['steps']>[number];

/** Issues for step names used twice, at the later one's name (spec.steps[2].name). */
export function duplicateStepNames(steps: ReadonlyArray<{ name: string }>): Array<{ index: number; message: string }> {
  const first = new Map<string, number>();
  const out: Array<{ index: number; message: string }> = [];
  steps.forEach((step, index) => {
    const seen = first.get(step.name);
    if (seen === undefined) first.set(step.name, index);
    else out.push({ index, message: `step name "${step.name}" is used twice (also steps[${seen}])` });
  });
  return out;
}

/** The current step: 1-based index and name; undefined for a task without steps. */
export interface StepRef {
  index: number;
  name: string;
}

/**
 * The step status.step points at: by name while the spec still has it (an edit is applied only once no episode
 * runs, so a running episode keeps its step's limits), else by position; step 1 before the first pass.
 */
export function currentStep(spec: AgentTaskSpec, status: AgentTaskStatus | undefined): StepRef | undefined {
  const steps = spec.steps;
  if (!steps?.length) return undefined;
  const named = steps.findIndex((s) => s.name === status?.step?.name);
  const index = named >= 0 ? named : Math.min((status?.step?.index ?? 1) - 1, steps.length - 1);
  return { index: index + 1, name: steps[index].name };
}

/** Where a field an episode runs with is written: the step's own (spec.steps[1].promptFile) or the task's. */
export function stepField(step: StepRef | undefined, field: string): string {
  return step ? `spec.steps[${step.index - 1}].${field}` : `spec.${field}`;
}

/** The spec an episode of step `index` (1-based) runs with: the step's prompt, agent, completion and limits. */
export function stepSpec(spec: AgentTaskSpec, index: number): AgentTaskSpec {
  const step = spec.steps?.[index - 1];
  if (!step) return spec;
  const env = new Map(spec.agent.env.map((e) => [e.name, e]));
  for (const e of step.agent?.env ?? []) env.set(e.name, e);
  return {
    ...spec,
    prompt: step.prompt,
    promptFile: step.promptFile,
    agent: { ...spec.agent, ...defined(step.agent ?? {}), env: [...env.values()] },
    completion: { ...spec.completion, ...defined(step.completion ?? {}) },
    limits: { ...spec.limits, ...defined(step.limits ?? {}) },
    scope: step.scope ?? spec.scope,
  };
}

/** What an episode runs with, given the status that records which step the task is in. */
export function effectiveSpec(spec: AgentTaskSpec, status: AgentTaskStatus | undefined): AgentTaskSpec {
  const step = currentStep(spec, status);
  return step ? stepSpec(spec, step.index) : spec;
}

/** A step's identity for the spec-edit rule: its name and everything its episodes run with. */
export function stepDigest(spec: AgentTaskSpec, index: number): string {
  const eff = stepSpec(spec, index);
  const def = {
    name: spec.steps?.[index - 1]?.name,
    prompt: eff.prompt,
    promptFile: eff.promptFile,
    agent: eff.agent,
    completion: eff.completion,
    limits: Object.fromEntries(STEP_LIMIT_FIELDS.map((k) => [k, eff.limits[k]])),
    gates: spec.steps?.[index - 1]?.gates,
  };
  return createHash('sha256').update(canonicalJson(def)).digest('hex').slice(0, 16);
}

/** The gates of the step the task is in, and the gate state of a step in fix episodes (status.steps[].gate). */
export function stepGates(
  spec: AgentTaskSpec,
  status: AgentTaskStatus | undefined,
): { gates: Gate[]; fixing?: GateState } {
  const step = currentStep(spec, status);
  if (!step) return { gates: [] };
  const gates = spec.steps?.[step.index - 1]?.gates ?? [];
  const rec = status?.steps?.[step.index - 1];
  return { gates, fixing: gates.length > 0 && rec?.name === step.name ? rec.gate : undefined };
}

/** "2/4 implement": the printer column and `episodic get`. */
export function stepSummary(index: number, total: number, name: string): string {
  return `${index}/${total} ${name}`;
}

/** EPISODIC_STEP and EPISODIC_STEP_INDEX for an episode of `step`. */
export function stepEnv(step: StepRef | undefined): Record<string, string> {
  return step ? { EPISODIC_STEP: step.name, EPISODIC_STEP_INDEX: String(step.index) } : {};
}

function defined<T extends object>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** JSON with sorted keys: the same definition always has the same digest. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
