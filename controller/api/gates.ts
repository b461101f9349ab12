// Gates (spec.steps[].gates): commands that must pass before a step is done. A gate's optional `fix` runs
// first (a formatter: its changes are kept), then its `check`; a failing check sends the step into fix
// episodes (see reconciler/gates.ts and the README's "Gates"). The schemas of a gate, of one gate's run as an
// episode reports it, and of the gate state a step keeps in status.
import { z } from 'zod';
import { GATE_OUTPUT_MAX } from './bounds.ts';

export const GATES_MAX = 8;
export const DEFAULT_MAX_FIX_EPISODES = 3;
export const DEFAULT_GATE_TIMEOUT_SECONDS = 600;

const argv = z.array(z.string().min(1)).min(1).describe('argv array, never a shell string');

/** One gate of a step; `name` is the task's RFC 1123 label schema. */
export function gateSchema(name: z.ZodString) {
  return z.strictObject({
    name: name.describe('unique in the step; {{gate.name}} in its fix episodes'),
    fix: argv.optional().describe('runs first, in the workspace; its changes are kept (e.g. a formatter)'),
    check: argv.describe('must exit 0 for the step to be done; its output tail is {{gate.output}}'),
    maxFixEpisodes: z
      .number()
      .int()
      .min(0)
      .max(100)
      .default(DEFAULT_MAX_FIX_EPISODES)
      .describe('fix episodes after a failing check before the step fails with GateFailed'),
    timeoutSeconds: z
      .number()
      .int()
      .min(1)
      .default(DEFAULT_GATE_TIMEOUT_SECONDS)
      .describe('for fix and for check each; the process tree is killed past it'),
  });
}

export type Gate = z.infer<ReturnType<typeof gateSchema>>;

/** Issues for gate names used twice in one step, at the later one (gates[2].name). */
export function duplicateGateNames(gates: ReadonlyArray<{ name: string }>): Array<{ index: number; message: string }> {
  const seen = new Map<string, number>();
  const out: Array<{ index: number; message: string }> = [];
  gates.forEach((gate, index) => {
    const first = seen.get(gate.name);
    if (first === undefined) seen.set(gate.name, index);
    else out.push({ index, message: `gate name "${gate.name}" is used twice in the step (also gates[${first}])` });
  });
  return out;
}

/** One gate's run after an episode: in the EpisodeResult, the episode record and the termination message. */
export const GateRunSchema = z.object({
  name: z.string().max(63),
  /** The fix command's exit code, when the gate has one (null: killed, timed out or not started). */
  fixExitCode: z.number().int().nullable().optional(),
  /** The check's exit code; null when it was killed, timed out or could not start. */
  exitCode: z.number().int().nullable(),
  timedOut: z.boolean().optional(),
  durationMs: z.number().nonnegative().optional(),
  /** The tail of fix's and check's output. */
  output: z.string().max(GATE_OUTPUT_MAX).optional(),
});

export type GateRun = z.infer<typeof GateRunSchema>;

/** A step whose gate failed: the fix episodes it has had and what the check last said. */
export const GateStateSchema = z.object({
  name: z.string().describe('the gate whose check failed last'),
  fixEpisodes: z.number().int().nonnegative().default(0).describe('fix episodes that ended since a gate first failed'),
  exitCode: z.number().int().nullable().optional(),
  lastOutput: z.string().max(GATE_OUTPUT_MAX).optional().describe("the check's output tail: {{gate.output}}"),
});

export type GateState = z.infer<typeof GateStateSchema>;

/** The first gate (in spec order) that did not pass, or undefined when every gate ran and passed. */
export function firstFailedGate(
  gates: readonly Gate[],
  runs: readonly GateRun[] | undefined,
): { gate: Gate; run?: GateRun } | undefined {
  for (const gate of gates) {
    const run = runs?.find((r) => r.name === gate.name);
    if (run?.exitCode !== 0) return { gate, run };
  }
  return undefined;
}
