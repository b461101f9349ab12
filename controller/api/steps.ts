// Pipelines (spec.steps): the schema of a step and what a step means for an episode. A step's agent,
// completion and limits are merged onto the task's, so everything that starts or judges an episode asks
// effectiveSpec() and never reads spec.agent/completion/limits of a task with steps directly.
// The schema of a step is in step-schema.ts, which agent-task.ts builds on; this module reads parsed specs.
import { createHash } from 'node:crypto';
import type { AgentTaskSpec, AgentTaskStatus } from './agent-task.ts';
import type { Gate, GateState } from './gates.ts';
import { overTask, STEP_LIMIT_FIELDS } from './step-schema.ts';

export type Step = NonNullable<AgentTaskSpec['steps']>[number];

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
    agent: { ...overTask(spec.agent, step.agent), env: [...env.values()] },
    completion: overTask(spec.completion, step.completion),
    limits: overTask(spec.limits, step.limits),
    scope: step.scope ?? spec.scope,
    sandbox: step.sandbox ?? spec.sandbox,
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
    sandbox: eff.sandbox,
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
