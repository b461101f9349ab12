// The rule of a step's gates (spec.steps[].gates), on top of an episode already recorded by its step's rules:
// a step whose completion rule is met is done only once every gate's check passed; a failing check puts the
// step into fix episodes (status.steps[].gate) until its gates pass or maxFixEpisodes is spent (GateFailed).
// A fix episode that exits cleanly is judged by the gates alone: passing them completes the step.
import type { AgentTaskSpec, AgentTaskStatus, StepStatus } from '../api/agent-task.ts';
import { clipStart, GATE_MESSAGE_OUTPUT_MAX, GATE_OUTPUT_MAX } from '../api/bounds.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import { firstFailedGate } from '../api/gates.ts';
import type { Gate, GateRun, GateState } from '../api/gates.ts';
import { stepGates } from '../api/steps.ts';
import { stepRecord } from './steps.ts';
import { normal, warning } from './actions.ts';
import type { Events } from './actions.ts';

/** Outcomes that say nothing about the fix (an outage, a stop): the fix episode runs again, uncounted. */
const UNCOUNTED = new Set(['transient', 'usageLimit', 'interrupted', 'cancelled', 'fatal']);

/**
 * `before`: the status the episode started from (its step record says whether it was a fix episode);
 * `after`: the status recordEpisode made of it. Returns `after` with the gates' verdict applied.
 */
export function judgeGates(
  before: AgentTaskStatus,
  after: AgentTaskStatus,
  result: EpisodeResult | undefined,
  spec: AgentTaskSpec | undefined,
): { status: AgentTaskStatus; events: Events } {
  const unchanged = { status: after, events: [] };
  if (!spec || !after.step || !after.lastEpisode) return unchanged;
  const { gates, fixing } = stepGates(spec, before);
  if (gates.length === 0) return unchanged;
  const outcome = after.lastEpisode.outcome;
  const n = after.lastEpisode.number;
  if (fixing) {
    if (UNCOUNTED.has(outcome)) return unchanged;
    const clean = outcome === 'succeeded' || outcome === 'continue';
    if (!clean) return failedFix(after, fixing, gates, n);
    return verdict(after, gates, result?.gates, { ...fixing, fixEpisodes: fixing.fixEpisodes + 1 }, n);
  }
  if (after.phase !== 'Succeeded') return unchanged;
  return verdict(after, gates, result?.gates, undefined, n);
}

/** The gate runs of an episode that ended the agent cleanly (a met completion rule, or a fix episode). */
function verdict(
  status: AgentTaskStatus,
  gates: readonly Gate[],
  runs: readonly GateRun[] | undefined,
  fixing: GateState | undefined,
  n: number,
): { status: AgentTaskStatus; events: Events } {
  const failed = firstFailedGate(gates, runs);
  if (!failed) {
    const names = gates.map((g) => g.name).join(', ');
    const reason = fixing ? 'GatesPassed' : (status.reason ?? 'GatesPassed');
    const how = fixing ? `fix episode ${n} passed` : `episode ${n} finished the step and passed`;
    const message = `${how} gate${gates.length > 1 ? 's' : ''} ${names}`;
    const passed = { ...withGate(status, undefined), phase: 'Succeeded' as const, reason, message };
    return { status: passed, events: [normal('GatesPassed', message)] };
  }
  if (!failed.run && !fixing) {
    // A met completion rule whose result has no gate runs (read back from its log after a controller crash):
    // the gates never judged the work, so another episode of the step runs them.
    const message = `episode ${n} met the completion rule but no gate runs were recorded; continuing`;
    return {
      status: { ...status, phase: 'Pending', reason: 'GatesNotRun', message },
      events: [warning('GatesNotRun', message)],
    };
  }
  // A fix episode without gate runs (its result recovered from the log after a controller crash): it counts,
  // and the gate's last output stays what the next fix episode is told.
  if (!runs?.length && fixing) {
    const gate = gates.find((g) => g.name === fixing.name) ?? failed.gate;
    return afterFailedCheck(status, gate, fixing, undefined);
  }
  const state: GateState = {
    name: failed.gate.name,
    fixEpisodes: fixing?.fixEpisodes ?? 0,
    exitCode: failed.run?.exitCode ?? null,
    lastOutput: clipStart(failed.run?.output ?? 'the gate did not run', GATE_OUTPUT_MAX),
  };
  return afterFailedCheck(status, failed.gate, state, failed.run);
}

/** A check failed: another fix episode, or GateFailed once maxFixEpisodes are spent. */
function afterFailedCheck(
  status: AgentTaskStatus,
  gate: Gate,
  state: GateState,
  run: GateRun | undefined,
): { status: AgentTaskStatus; events: Events } {
  const how = run?.timedOut
    ? `timed out after ${gate.timeoutSeconds}s`
    : run
      ? `exited ${run.exitCode ?? 'without a code'}`
      : 'did not run';
  if (state.fixEpisodes >= gate.maxFixEpisodes) return gateFailed(status, gate, state, how);
  // The breaker opened on this episode: the task stops for review, and the gate state waits for its resume.
  if (status.phase === 'NeedsReview') return { status: withGate(status, state), events: [] };
  const message = `gate ${gate.name} ${how}; fix episode ${state.fixEpisodes + 1}/${gate.maxFixEpisodes} next`;
  return {
    status: {
      ...withGate(status, state),
      phase: 'Pending',
      reason: 'GateCheckFailed',
      message,
      nextEpisodeAt: undefined,
    },
    events: [warning('GateCheckFailed', message)],
  };
}

/** A fix episode whose agent failed (or timed out): it counts; the recorded backoff or skip stands. */
function failedFix(
  status: AgentTaskStatus,
  fixing: GateState,
  gates: readonly Gate[],
  n: number,
): { status: AgentTaskStatus; events: Events } {
  const state = { ...fixing, fixEpisodes: fixing.fixEpisodes + 1 };
  const gate = gates.find((g) => g.name === fixing.name) ?? gates[0];
  if (state.fixEpisodes >= gate.maxFixEpisodes && status.phase !== 'Skipped')
    return gateFailed(status, gate, state, `still failing after fix episode ${n} failed`);
  return { status: withGate(status, state), events: [] };
}

function gateFailed(
  status: AgentTaskStatus,
  gate: Gate,
  state: GateState,
  how: string,
): { status: AgentTaskStatus; events: Events } {
  const output = state.lastOutput ? `: ${clipStart(state.lastOutput.trimEnd(), GATE_MESSAGE_OUTPUT_MAX)}` : '';
  const message = `gate ${gate.name} ${how} after ${state.fixEpisodes} of ${gate.maxFixEpisodes} fix episodes${output}`;
  return {
    status: { ...withGate(status, state), phase: 'Failed', reason: 'GateFailed', message, nextEpisodeAt: undefined },
    events: [warning('TaskFailed', message)],
  };
}

function withGate(status: AgentTaskStatus, gate: GateState | undefined): AgentTaskStatus {
  const rec = stepRecord(status);
  if (!rec || !status.step) return status;
  const next: StepStatus = { ...rec, gate };
  if (gate === undefined) delete next.gate;
  const steps = [...(status.steps ?? [])];
  steps[status.step.index - 1] = next;
  return { ...status, steps };
}
