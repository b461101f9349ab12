// The schema of one pipeline step (spec.steps[]), built from the task's own agent/completion/limits schemas
// by agent-task.ts. Nothing here imports agent-task.ts, so the schema and the task's type form no cycle.
import { z } from 'zod';
import { duplicateGateNames, GATES_MAX, gateSchema } from './gates.ts';
import { ForEachSchema } from './for-each.ts';
import { AttemptsSchema } from './attempts.ts';
import { ScopeSchema, SkipWhenSchema } from './scope.ts';
import { SandboxSchema } from './sandbox.ts';

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
      // Fan-out (api/for-each.ts): the step's prompt is each child's, with {{item}} filled in.
      forEach: ForEachSchema.optional(),
      sandbox: SandboxSchema.optional().describe("replaces the task's sandbox for this step's episodes"),
      // Best-of-N (api/attempts.ts) for this step: its attempts run the step, the winner's branch goes on.
      attempts: AttemptsSchema.optional(),
    })
    .superRefine((step, ctx) => {
      if ((step.prompt === undefined) === (step.promptFile === undefined))
        ctx.addIssue({ code: 'custom', path: ['prompt'], message: PROMPT_RULE });
      if (step.forEach && step.prompt === undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['forEach'],
          message: 'a forEach step needs prompt (each child gets it)',
        });
      if (step.forEach && step.gates?.length)
        ctx.addIssue({ code: 'custom', path: ['gates'], message: 'a forEach step runs no episode of its own to gate' });
      if (step.forEach && step.attempts)
        ctx.addIssue({ code: 'custom', path: ['attempts'], message: 'a step has forEach or attempts, not both' });
      if (step.attempts?.select === 'judge' && !step.attempts.judge)
        ctx.addIssue({ code: 'custom', path: ['attempts', 'judge'], message: 'select: judge needs judge.prompt' });
      for (const dup of duplicateGateNames(step.gates ?? []))
        ctx.addIssue({ code: 'custom', path: ['gates', dup.index, 'name'], message: dup.message });
    })
    .meta({ 'x-kubernetes-validations': [{ rule: 'has(self.prompt) != has(self.promptFile)', message: PROMPT_RULE }] });
}

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

/** A step's block (agent, completion, limits) over the task's: each field the step sets replaces the task's. */
export function overTask<T extends object>(task: T, step: object | undefined): T {
  const set = Object.entries(step ?? {}).filter(([, v]) => v !== undefined);
  return { ...task, ...Object.fromEntries(set) };
}
