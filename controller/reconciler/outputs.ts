// Outputs on the status: an ended episode's outputs become the task's (status.outputs) and its step's
// (status.steps[].outputs), the latest value per key. Any ended episode counts, whatever its outcome: what it
// published is a fact, and a later episode that publishes the same key replaces it.
import { OUTPUTS_MAX_KEYS, OUTPUTS_TOTAL_MAX_BYTES } from '../api/bounds.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import { mergeOutputs } from '../api/outputs.ts';
import { stepRecord } from './steps.ts';

/** status.outputs keeps this many keys (two episodes' worth), the least recently published going first. */
export const TASK_OUTPUTS_MAX_KEYS = 2 * OUTPUTS_MAX_KEYS;
export const TASK_OUTPUTS_MAX_BYTES = 2 * OUTPUTS_TOTAL_MAX_BYTES;

/** The status after an episode of the step it points at ended with `result`. */
export function recordOutputs(status: AgentTaskStatus, result: EpisodeResult | undefined): AgentTaskStatus {
  const published = result?.outputs;
  if (!published || Object.keys(published).length === 0) return status;
  const next: AgentTaskStatus = {
    ...status,
    outputs: mergeOutputs(status.outputs, published, TASK_OUTPUTS_MAX_KEYS, TASK_OUTPUTS_MAX_BYTES),
  };
  const rec = stepRecord(status);
  if (!rec || !status.step || !status.steps) return next;
  const steps = [...status.steps];
  // A step's outputs are bounded like one episode's: what its next step can read stays prompt-sized.
  steps[status.step.index - 1] = {
    ...rec,
    outputs: mergeOutputs(rec.outputs, published, OUTPUTS_MAX_KEYS, OUTPUTS_TOTAL_MAX_BYTES),
  };
  return { ...next, steps };
}
