// Fan-out steps (issue 32 §1): what a forEach step does in a pass. It runs no agent of its own: its items
// become child tasks (TASK-STEP-INDEX, planned by spawn's planChild, so labels, depth and limits are spawn's),
// at most maxConcurrency unfinished at once, and the step ends by its failurePolicy once none runs.
// Pure: the loop gathers the children (SpawnFacts) and creates what the CreateTasks action lists.
import type { AgentTaskSpec, AgentTaskStatus, StepStatus } from '../api/agent-task.ts';
import { clip } from '../api/bounds.ts';
import { FOR_EACH_ITEMS_SUMMARY_MAX, fromOutputRef, parseItems, renderItemPrompt } from '../api/for-each.ts';
import type { FailurePolicy, ForEach, Item } from '../api/for-each.ts';
import { stepSpec } from '../api/steps.ts';
import { normal, warning } from './actions.ts';
import type { Action, Events } from './actions.ts';
import type { ChildView } from './children.ts';
import { isTerminal } from './children.ts';
import { planChild } from './spawn.ts';
import { advanceStep, stepRecord, stepWords, withRecord } from './steps.ts';
import { gitWorkspaceOf } from '../api/git-workspace.ts';

/** How the items stand: children that succeeded, ended otherwise, run (or were created), and are not made yet. */
export interface FanOutCounts {
  total: number;
  succeeded: number;
  failed: number;
  running: number;
}

export type FanOutVerdict = { kind: 'wait'; more: number } | { kind: 'succeeded' | 'failed'; message: string };

/** Children that must succeed under the policy. */
export function neededToSucceed(policy: FailurePolicy, total: number): number {
  if (policy === 'all') return total;
  if (policy === 'any') return 1;
  return policy.atLeast;
}

export function policyWords(policy: FailurePolicy): string {
  return typeof policy === 'string' ? policy : `atLeast ${policy.atLeast}`;
}

/**
 * The policy rule: more children are made while the policy can still be met and fewer than maxConcurrency run;
 * once none runs and none will be made, the step succeeded when enough children did, else it failed.
 */
export function judgeFanOut(policy: FailurePolicy, maxConcurrency: number, c: FanOutCounts): FanOutVerdict {
  const needed = neededToSucceed(policy, c.total);
  const notMade = c.total - c.succeeded - c.failed - c.running;
  const reachable = c.succeeded + c.running + notMade >= needed;
  const more = reachable ? Math.max(0, Math.min(notMade, maxConcurrency - c.running)) : 0;
  if (c.running > 0 || more > 0) return { kind: 'wait', more };
  const words = `${c.succeeded} of ${c.total} items succeeded, ${c.failed} did not (failurePolicy ${policyWords(policy)})`;
  if (c.succeeded >= needed) return { kind: 'succeeded', message: words };
  const skipped = notMade > 0 ? `; ${notMade} not started: the policy could no longer be met` : '';
  return { kind: 'failed', message: `${words}${skipped}` };
}

/** The items of a forEach step: written in the spec, or an earlier step's output (a JSON array); or why not. */
export function resolveItems(forEach: ForEach, status: AgentTaskStatus): Item[] | string {
  if (forEach.items) return forEach.items;
  const ref = forEach.fromOutput ?? '';
  const from = fromOutputRef(ref);
  const outputs = status.steps?.find((s) => s.name === from?.step)?.outputs;
  return parseItems(from && outputs && Object.hasOwn(outputs, from.key) ? outputs[from.key] : undefined, ref);
}

/** The child of item `index`: `TASK-STEP-INDEX`. */
export function itemChildName(task: string, step: string, index: number): string {
  return `${task}-${step}-${index}`;
}

/** A git workspace's child works on episodic/TASK/STEP-INDEX, started from the parent's branch. */
function childWorkspace(spec: AgentTaskSpec, task: string, step: string, index: number): AgentTaskSpec['workspace'] {
  const git = gitWorkspaceOf(spec.workspace);
  if (!git) return spec.workspace;
  return { git: { ...git, ref: `episodic/${task}/${step}-${index}`, from: git.from ?? git.ref } };
}

export interface FanOutInput {
  task: string;
  labels?: Readonly<Record<string, string>>;
  spec: AgentTaskSpec;
  status: AgentTaskStatus;
  children: readonly ChildView[];
  /** False while the controller stops: nothing new is made. */
  create: boolean;
  now: Date;
}

export interface FanOutPass {
  status: AgentTaskStatus;
  actions: Action[];
  events: Events;
}

type Made = Extract<Action, { type: 'CreateTasks' }>['tasks'][number];

/** One pass of the current forEach step. */
export function fanOutPass(input: FanOutInput): FanOutPass {
  const { status, spec } = input;
  const ref = status.step;
  const step = ref && spec.steps?.[ref.index - 1];
  const rec = stepRecord(status);
  if (!ref || !step?.forEach || !rec) return { status, actions: [], events: [] };
  const items = resolveItems(step.forEach, status);
  if (typeof items === 'string') return failStep(status, 'ForEachInvalid', items);
  const byName = new Map(input.children.map((c) => [c.name, c]));
  const names = items.map((_, i) => itemChildName(input.task, step.name, i));
  const created = Math.min(rec.forEach?.created ?? 0, items.length);
  const counts = countItems(names.slice(0, created), byName, items.length);
  const verdict = judgeFanOut(step.forEach.failurePolicy, step.forEach.maxConcurrency, counts);
  const upTo = verdict.kind === 'wait' && input.create ? created + verdict.more : created;
  const planned: Made[] = [];
  for (let i = 0; i < upTo; i++) {
    if (i < created && byName.has(names[i])) continue; // made and seen; one made but not seen yet is made again (a no-op)
    const plan = planItem(input, step.name, items[i], i);
    if (typeof plan === 'string') return failStep(status, 'ForEachInvalid', plan);
    planned.push(plan);
  }
  const summary = itemsSummary(names, byName, upTo);
  const made = upTo - created;
  const progress: StepStatus = {
    ...rec,
    forEach: { ...counts, running: counts.running + made, created: upTo },
    items: summary,
  };
  const next = withRecord(status, ref.index, progress);
  const actions: Action[] = planned.length > 0 ? [{ type: 'CreateTasks', tasks: planned }] : [];
  if (verdict.kind !== 'wait')
    return verdict.kind === 'succeeded'
      ? succeedStep(next, spec, verdict.message, input.now)
      : failStep(next, 'ForEachFailed', verdict.message);
  const message = `${stepWords(next)}: ${counts.running + made} of ${items.length} items running, ${counts.succeeded} succeeded, ${counts.failed} did not`;
  return { status: { ...next, phase: 'Waiting', reason: 'ForEachRunning', message }, actions, events: [] };
}

function countItems(made: readonly string[], byName: ReadonlyMap<string, ChildView>, total: number): FanOutCounts {
  const counts: FanOutCounts = { total, succeeded: 0, failed: 0, running: 0 };
  for (const name of made) {
    const child = byName.get(name);
    if (!child || !isTerminal(child)) counts.running++;
    else if (child.phase === 'Succeeded') counts.succeeded++;
    else counts.failed++;
  }
  return counts;
}

function planItem(input: FanOutInput, step: string, item: Item, index: number): Made | string {
  const eff = stepSpec(input.spec, input.status.step?.index ?? 1);
  const template = eff.prompt ?? '';
  const parent = { name: input.task, spec: eff, labels: input.labels, children: [] };
  const plan = planChild(parent, {
    op: 'spawn',
    name: `${step}-${index}`,
    prompt: renderItemPrompt(template, item, index),
  });
  if (!plan.ok) return `item ${index}: ${plan.message}`;
  const workspace = childWorkspace(eff, input.task, step, index);
  // Each child's branch enters the parent's merge queue itself (spec.integrate is inherited).
  const integrate = workspace && input.spec.integrate ? { integrate: input.spec.integrate } : {};
  return {
    name: plan.name,
    spec: { ...plan.spec, ...(workspace ? { workspace } : {}), ...integrate },
    labels: plan.labels,
  };
}

/** {{steps.NAME.items}}: one entry per item made (index, child, phase, outputs), in order, bounded. */
export function itemsSummary(names: readonly string[], byName: ReadonlyMap<string, ChildView>, made: number): string {
  const entries: string[] = [];
  let used = 2;
  for (let i = 0; i < made; i++) {
    const child = byName.get(names[i]);
    const entry = JSON.stringify({
      index: i,
      task: names[i],
      phase: child?.phase ?? 'Pending',
      outputs: child?.outputs ?? {},
    });
    if (used + entry.length + 40 > FOR_EACH_ITEMS_SUMMARY_MAX) {
      entries.push(JSON.stringify({ more: made - i }));
      break;
    }
    entries.push(entry);
    used += entry.length + 1;
  }
  return `[${entries.join(',')}]`;
}

function succeedStep(status: AgentTaskStatus, spec: AgentTaskSpec, message: string, now: Date): FanOutPass {
  const words = `${stepWords(status)}: ${message}`;
  const done: AgentTaskStatus = { ...status, phase: 'Succeeded', reason: 'ForEachSucceeded', message: words };
  const advanced = advanceStep(done, spec, now);
  return { status: advanced.status, actions: [], events: [normal('ForEachSucceeded', words), ...advanced.events] };
}

function failStep(status: AgentTaskStatus, reason: string, message: string): FanOutPass {
  const text = clip(message, 1000);
  return {
    status: { ...status, phase: 'Failed', reason, message: text },
    actions: [],
    events: [warning('TaskFailed', text)],
  };
}
