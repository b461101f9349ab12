// Best-of-N attempts (issue 32 §2) in a pass, pure: the task runs no episode of its own; its N attempts are
// child tasks (TASK-attempt-N, made by spawn's planChild rules) of the task's own spec on their own branches
// from the same commit; once all ended, evidence or a judge child (TASK-judge) picks the winner, whose branch
// and outputs become the task's. The attempts are the task's family: its maxCostUSD counts all of them.
import { TERMINAL_PHASES } from '../api/agent-task.ts';
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import { clip } from '../api/bounds.ts';
import type { AdoptOutcome, AttemptStatus, AttemptsStatus } from '../api/attempts.ts';
import { JUDGE_DIFF_MAX, JUDGE_EVIDENCE_MAX } from '../api/attempts.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import { normal, warning } from './actions.ts';
import type { Action, Events } from './actions.ts';
import type { ChildView } from './children.ts';
import { isTerminal } from './children.ts';
import { bestByEvidence, judgeVerdict } from './attempts-select.ts';
import { planChild } from './spawn.ts';
import { advanceStep, withRecord } from './steps.ts';
import { gitWorkspaceOf } from '../api/git-workspace.ts';

export interface AttemptsInput {
  task: string;
  labels?: Readonly<Record<string, string>>;
  spec: AgentTaskSpec;
  status: AgentTaskStatus;
  children: readonly ChildView[];
  create: boolean;
  /** Whether the loop can make the winner's branch the task's (AdoptWinner), and what came of it. */
  adoption?: { supported: boolean; outcome?: AdoptOutcome };
  /** A step's attempts advance the task to its next step at this time. */
  now?: Date;
  /** Each candidate's diff by attempt number, gathered by the loop when diffsWanted says so. */
  diffs?: Readonly<Record<number, string>>;
}

export interface AttemptsPass {
  status: AgentTaskStatus;
  actions: Action[];
  events: Events;
}

type Made = Extract<Action, { type: 'CreateTasks' }>['tasks'][number];

export const attemptName = (task: string, n: number) => `${task}-attempt-${n}`;
export const judgeName = (task: string) => `${task}-judge`;
export const attemptBranch = (task: string, n: number) => `episodic/${task}/attempt-${n}`;

/** The candidates as the children show them. */
export function candidatesOf(task: string, count: number, children: readonly ChildView[]): AttemptStatus[] {
  const byName = new Map(children.map((c) => [c.name, c]));
  return Array.from({ length: count }, (_, i) => {
    const number = i + 1;
    const c = byName.get(attemptName(task, number));
    return {
      number,
      task: attemptName(task, number),
      branch: attemptBranch(task, number),
      phase: c?.phase,
      gatesPassed: c?.evidence?.gatesPassed,
      insideScope: c ? !c.evidence?.outOfScope : undefined,
      changedLines: c?.evidence?.changedLines,
      costUSD: c?.costUSD ?? 0,
      finishedAt: c?.evidence?.finishedAt,
    };
  });
}

const ended = (phase: string | undefined) => (TERMINAL_PHASES as readonly string[]).includes(phase ?? '');

/**
 * Whose attempts run now: the task's (spec.attempts), or the current step's (TASK-STEP-attempt-N on
 * episodic/TASK-STEP/attempt-N, each a one-step task of that step), or none.
 */
export function attemptsScope(
  task: string,
  spec: AgentTaskSpec,
  status: AgentTaskStatus,
): { prefix: string; spec: AgentTaskSpec; stepIndex?: number } | undefined {
  if (spec.attempts) return { prefix: task, spec };
  const index = status.step?.index ?? 0;
  const step = spec.steps?.[index - 1];
  if (!step?.attempts) return undefined;
  const { attempts, ...only } = step;
  const { integrate: _i, prompt: _p, promptFile: _f, ...rest } = spec;
  return { prefix: `${task}-${step.name}`, spec: { ...rest, attempts, steps: [only] }, stepIndex: index };
}

export function attemptsPass(input: AttemptsInput): AttemptsPass | undefined {
  const scope = attemptsScope(input.task, input.spec, input.status);
  if (!scope) return undefined;
  const pass = taskAttemptsPass({ ...input, task: scope.prefix, spec: scope.spec });
  return scope.stepIndex ? stepAttemptsEnd(pass, input, scope.stepIndex) : pass;
}

/** A step's attempts chose (and adopted) a winner: the step succeeds with its outputs and the task goes on. */
function stepAttemptsEnd(pass: AttemptsPass, input: AttemptsInput, index: number): AttemptsPass {
  if (pass.status.phase !== 'Succeeded') return pass;
  const rec = input.status.steps?.[index - 1];
  if (!rec) return pass;
  const withOutputs = withRecord(pass.status, index, { ...rec, outputs: pass.status.outputs });
  const last = index >= (input.spec.steps?.length ?? 0);
  const status = last ? withOutputs : { ...withOutputs, outputs: input.status.outputs };
  const advanced = advanceStep(status, input.spec, input.now ?? new Date(0));
  return { status: advanced.status, actions: pass.actions, events: [...pass.events, ...advanced.events] };
}

function taskAttemptsPass(input: AttemptsInput): AttemptsPass {
  const { spec, status, task } = input;
  const attempts = spec.attempts as NonNullable<AgentTaskSpec['attempts']>;
  const seen = new Set(input.children.map((c) => c.name));
  const candidates = candidatesOf(task, attempts.count, input.children);
  const missing = candidates.filter((c) => !seen.has(c.task));
  const open = candidates.filter((c) => !ended(c.phase)).length;
  if (missing.length > 0 || open > 0) {
    const made = input.create ? missing.map((c) => planAttempt(input, c.number)) : [];
    const refused = made.find((m): m is string => typeof m === 'string');
    if (refused) return fail(status, 'AttemptsInvalid', refused);
    const message = `${open} of ${attempts.count} attempts running`;
    const next = withAttempts(status, { phase: 'Running', candidates });
    const actions: Action[] = made.length > 0 ? [{ type: 'CreateTasks', tasks: made as Made[] }] : [];
    return { status: { ...next, phase: 'Waiting', reason: 'AttemptsRunning', message }, actions, events: [] };
  }
  if (!candidates.some((c) => c.phase === 'Succeeded')) {
    const next = withAttempts(status, { phase: 'NoneSucceeded', candidates });
    return fail(next, 'NoAttemptSucceeded', `none of the ${attempts.count} attempts succeeded`);
  }
  if (attempts.select === 'judge' && attempts.judge) return judged(input, candidates);
  return choose(input, candidates, bestByEvidence(candidates) as AttemptStatus, 'evidence');
}

/** select: judge: the judge child is made, waited for, and its verdict used when it names a candidate. */
function judged(input: AttemptsInput, candidates: AttemptStatus[]): AttemptsPass {
  const name = judgeName(input.task);
  const judge = input.children.find((c) => c.name === name);
  if (!judge || !isTerminal(judge)) {
    const plan = judge || !input.create ? undefined : planJudge(input, candidates);
    if (typeof plan === 'string') return fail(input.status, 'AttemptsInvalid', plan);
    const next = withAttempts(input.status, { phase: 'Judging', candidates });
    const message = `all ${candidates.length} attempts ended; the judge ${name} is choosing`;
    const actions: Action[] = plan ? [{ type: 'CreateTasks', tasks: [plan] }] : [];
    return { status: { ...next, phase: 'Waiting', reason: 'AttemptsJudging', message }, actions, events: [] };
  }
  const verdict = judgeVerdict(judge.outputs?.winner, candidates);
  if (verdict.ok) return choose(input, candidates, candidates[verdict.number - 1], 'judge');
  const best = bestByEvidence(candidates) as AttemptStatus;
  return choose(input, candidates, best, 'evidence', `${verdict.why}; evidence chose instead`);
}

/** The winner's branch, outputs and evidence become the task's; first the loop makes its branch the task's ref. */
function choose(
  input: AttemptsInput,
  candidates: AttemptStatus[],
  winner: AttemptStatus,
  by: 'evidence' | 'judge',
  fallback?: string,
): AttemptsPass {
  const { status, spec } = input;
  const why = fallback ? ` (${fallback})` : '';
  const chose = `attempt ${winner.number} of ${candidates.length} won by ${by}${why}: branch ${winner.branch}`;
  const base: AttemptsStatus = {
    phase: 'Chosen',
    candidates,
    winner: winner.number,
    selectedBy: by,
    ...(fallback ? { judgeFallback: fallback } : {}),
  };
  const into = taskRef(spec);
  const outcome = input.adoption?.outcome;
  const adopting = input.adoption?.supported && into && winner.phase === 'Succeeded';
  const fresh = outcome?.winner === winner.number && outcome.from === winner.branch;
  if (adopting && !fresh) {
    const next = withAttempts(status, { ...base, phase: 'Adopting' });
    const message = `${chose}; making it ${into}`;
    const action: Action = {
      type: 'AdoptWinner',
      winner: winner.number,
      from: winner.branch ?? '',
      into,
      deleteBranches: spec.attempts?.keepLosers ? [] : losers(candidates, winner),
    };
    return { status: { ...next, phase: 'Waiting', reason: 'AttemptAdopting', message }, actions: [action], events: [] };
  }
  if (adopting && outcome && !outcome.ok) {
    return fail(withAttempts(status, base), 'AttemptNotAdopted', `${chose}; ${outcome.message}`);
  }
  const kept = spec.attempts?.keepLosers ? losers(candidates, winner) : [];
  const adopted = adopting && outcome?.ok ? { ...outcome.adopted, keptBranches: kept } : undefined;
  const made = adopted ? `; ${adopted.into} is now its ${adopted.commit?.slice(0, 12) ?? 'head'}` : '';
  const message = `${chose}${made}`;
  const child = input.children.find((c) => c.name === winner.task);
  const outputs = { ...child?.outputs, branch: winner.branch ?? '' };
  const ok = winner.phase === 'Succeeded';
  // The winner's work is the task's: a trigger publishes (and a queue awaits) only a task that changed something.
  const workspaceChanges = Math.max(status.workspaceChanges, child?.evidence?.workspaceChanges ?? 0);
  const next: AgentTaskStatus = {
    ...withAttempts(status, { ...base, ...(adopted ? { adopted } : {}) }),
    workspaceChanges,
    phase: ok ? 'Succeeded' : 'Failed',
    reason: 'AttemptChosen',
    message,
    outputs,
  };
  const events = [fallback ? warning('AttemptChosen', message) : normal('AttemptChosen', message)];
  return { status: next, actions: [], events };
}

/** The losing attempts' branches (the winner's stays: outputs.branch names it). */
function losers(candidates: readonly AttemptStatus[], winner: AttemptStatus): string[] {
  return candidates.filter((c) => c.number !== winner.number && c.branch).map((c) => c.branch as string);
}

/** The task's own branch, which the winner's becomes. */
function taskRef(spec: AgentTaskSpec): string | undefined {
  return gitWorkspaceOf(spec.workspace)?.ref;
}

function withAttempts(status: AgentTaskStatus, attempts: AttemptsStatus): AgentTaskStatus {
  return { ...status, attempts };
}

function fail(status: AgentTaskStatus, reason: string, message: string): AttemptsPass {
  const text = clip(message, 1000);
  return {
    status: { ...status, phase: 'Failed', reason, message: text },
    actions: [],
    events: [warning('TaskFailed', text)],
  };
}

/**
 * Attempt N: the task's own spec without attempts, on episodic/TASK/attempt-N from the task's branch; without
 * integrate too: only the winner's work, once it is the task's branch, enters the queue (as the task).
 */
function planAttempt(input: AttemptsInput, n: number): Made | string {
  const { attempts: _, integrate: _i, ...own } = input.spec;
  const plan = planChild(
    { name: input.task, spec: input.spec, labels: input.labels, children: [] },
    { op: 'spawn', name: `attempt-${n}`, prompt: 'attempt' },
  );
  if (!plan.ok) return `attempt ${n}: ${plan.message}`;
  const git = gitWorkspaceOf(input.spec.workspace);
  if (!git) return 'attempts need a git workspace';
  const workspace = { git: { ...git, ref: attemptBranch(input.task, n), from: git.from ?? git.ref } };
  return { name: plan.name, spec: { ...own, workspace, limits: plan.spec.limits }, labels: plan.labels };
}

/**
 * The attempts whose diffs the judge's prompt needs now (all ended, one succeeded, no judge yet): the loop
 * gathers them (ReconcileInput.attemptDiffs) only then. Empty for any other task or pass.
 */
export function diffsWanted(
  task: string,
  taskSpec: AgentTaskSpec,
  status: AgentTaskStatus,
  children: readonly ChildView[],
): AttemptStatus[] {
  const scope = attemptsScope(task, taskSpec, status);
  const attempts = scope?.spec.attempts;
  if (!scope || attempts?.select !== 'judge' || children.some((c) => c.name === judgeName(scope.prefix))) return [];
  const candidates = candidatesOf(scope.prefix, attempts.count, children);
  const seen = new Set(children.map((c) => c.name));
  const over = candidates.every((c) => seen.has(c.task) && ended(c.phase));
  return over && candidates.some((c) => c.phase === 'Succeeded') ? candidates : [];
}

/** {{attempts}}: each candidate's evidence, then its diff (bounded; agent-written, so no placeholder survives). */
export function judgeEvidence(
  candidates: readonly AttemptStatus[],
  diffs: Readonly<Record<number, string>> = {},
): string {
  const evidence = clip(candidates.map((c) => JSON.stringify(c)).join('\n'), JUDGE_EVIDENCE_MAX);
  const shown = candidates.map((c) => {
    const diff = diffs[c.number];
    const body = diff === undefined ? '(no diff available)' : diff.trim() ? clip(diff, JUDGE_DIFF_MAX) : '(no changes)';
    return `--- attempt ${c.number} diff (${c.branch}) ---\n${body}`;
  });
  return [evidence, ...shown].join('\n\n').replaceAll('{{', '{ {');
}

/** The judge: one child with the judge's prompt, {{attempts}} the candidates' evidence and diffs (bounded). */
function planJudge(input: AttemptsInput, candidates: AttemptStatus[]): Made | string {
  const judge = input.spec.attempts?.judge;
  const evidence = judgeEvidence(candidates, input.diffs);
  const prompt = (judge?.prompt ?? '').replace(/\{\{\s*attempts\s*\}\}/g, () => evidence);
  const agent = { ...input.spec.agent, command: judge?.agent?.command ?? input.spec.agent.command };
  const spec = { ...input.spec, agent, workspace: undefined, attempts: undefined, integrate: undefined };
  const plan = planChild(
    { name: input.task, spec, labels: input.labels, children: [] },
    { op: 'spawn', name: 'judge', prompt },
  );
  if (!plan.ok) return `judge: ${plan.message}`;
  const { workspace: _w, ...rest } = plan.spec;
  return { name: plan.name, spec: rest, labels: plan.labels };
}

/** An ended episode's evidence added to the task's totals: changed lines, and whether it left its scope. */
export function tallyEvidence(status: AgentTaskStatus, result: EpisodeResult | undefined): AgentTaskStatus {
  const ws = result?.evidence?.workspace;
  const lines = (ws?.insertions ?? 0) + (ws?.deletions ?? 0);
  const out = (result?.scope?.count ?? 0) > 0 ? 1 : 0;
  if (!ws && !out) return status;
  return {
    ...status,
    changedLines: (status.changedLines ?? 0) + lines,
    ...(out || status.outOfScopeEpisodes ? { outOfScopeEpisodes: (status.outOfScopeEpisodes ?? 0) + out } : {}),
  };
}
