// What the console serves: a row per task for the fleet, a task's detail, a budget's window. Built from the
// status and a few spec fields only (limits, labels), never from the whole spec: its env values are secrets.
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { isTerminal } from '../api/agent-task-status.ts';
import type { TaskOrigin } from './origin.ts';
import type { AgentBudgetStatus } from '../api/agent-budget.ts';
import type { EpisodeRecord } from '../api/episode-record.ts';
import type { EpisodeLog, LogRequest } from './log-text.ts';
import type { SpecTask } from '../sources/local/spec-files.ts';
import { DEFAULT_MAX_FIX_EPISODES } from '../api/gates.ts';
import type { SuspendHold } from '../api/hold.ts';
import { AgentTriggerStatusSchema, TRIGGER_LABEL } from '../api/agent-trigger.ts';
import { OWNER_LABELS } from '../api/spawn-fields.ts';
import type { BoardView, MailView } from './board-view.ts';

export interface TaskRow {
  key: string;
  namespace: string;
  name: string;
  labels: Record<string, string>;
  phase: string;
  reason?: string;
  message?: string;
  progress?: string;
  step?: string;
  episodes: number;
  maxEpisodes?: number;
  breaker?: string;
  costUSD: number;
  maxCostUSD?: number;
  lastProgressAt?: string;
  runningEpisode?: number;
  /** The pull request its trigger opened (status.pullRequests of the episodic.dev/trigger label's trigger). */
  pullRequest?: PullRequestLink;
  /** Who made it: parent task, trigger, forge item, tick (origin.ts). */
  parent?: string;
  trigger?: string;
  item?: { number: number; url?: string };
  tick?: string;
  /** When its first episode started (startedAtOf), and when its last one ended once the task is finished. */
  startedAt?: string;
  finishedAt?: string;
}

export interface RowExtras {
  pullRequest?: PullRequestLink;
  origin?: TaskOrigin;
  /** The first episode's start when the status no longer says it (more than one episode ran). */
  firstStartedAt?: string;
}

/** The task's start: its first episode's (from the status while it is the only one), else its first step's. */
export function startedAtOf(status: AgentTaskStatus, known?: string): string | undefined {
  if (known) return known;
  if (status.episodes <= 1) {
    const first = status.currentEpisode?.startedAt ?? status.lastEpisode?.startedAt;
    if (first) return first;
  }
  return status.steps?.find((s) => s.startedAt)?.startedAt;
}

export interface PullRequestLink {
  number: number;
  url: string;
}

export interface TaskDetail {
  row: TaskRow;
  status: AgentTaskStatus;
  episodes: EpisodeRecord[];
  /** AgentBudgets whose window currently holds this task. */
  heldBy: string[];
  /** spec.steps[].gates' maxFixEpisodes by step and gate: names and numbers only, never the spec itself. */
  gateLimits?: GateLimits;
  /** A person's suspend hold (api/hold.ts), and whether spec.suspend is set (which a hold cannot lift). */
  hold?: SuspendHold;
  specSuspend: boolean;
  /** The tasks it created (spawned children, a forEach step's items, best-of-N attempts), in name order. */
  children?: ChildRow[];
  /** Added by the server from the fleet's rows: the parent and the children tree (family.ts). */
  family?: Family;
  /** Its namespace's blackboard and its waiting messages, bounded (board-view.ts). */
  blackboard?: BoardView;
  mailbox?: MailView;
}

export interface ChildRow {
  name: string;
  phase: string;
  reason?: string;
  costUSD: number;
}

/** The rows whose parent label names the task: its children, numbers in order (each-2 before each-10). */
export function childrenOf(rows: readonly TaskRow[], namespace: string, name: string): ChildRow[] {
  return rows
    .filter((r) => r.namespace === namespace && r.labels[OWNER_LABELS.AgentTask] === name)
    .sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }))
    .map((r) => ({ name: r.name, phase: r.phase, reason: r.reason, costUSD: r.costUSD }));
}

export interface FamilyNode {
  row: TaskRow;
  children: FamilyNode[];
}

export interface Family {
  parent?: TaskRow;
  children: FamilyNode[];
  /** Descendants not listed past family.ts's FAMILY_MAX. */
  more: number;
}

export type GateLimits = Record<string, Record<string, number>>;

/** The fix-episode cap of each step's gates, read loosely: the cluster's spec is raw JSON, not defaulted. */
export function gateLimitsOf(spec: unknown): GateLimits | undefined {
  const steps = (spec as { steps?: unknown } | undefined)?.steps;
  if (!Array.isArray(steps)) return undefined;
  const limits: GateLimits = {};
  for (const step of steps as Array<{ name?: unknown; gates?: unknown }>) {
    if (typeof step?.name !== 'string' || !Array.isArray(step.gates)) continue;
    const gates: Record<string, number> = {};
    for (const gate of step.gates as Array<{ name?: unknown; maxFixEpisodes?: unknown }>)
      if (typeof gate?.name === 'string')
        gates[gate.name] = typeof gate.maxFixEpisodes === 'number' ? gate.maxFixEpisodes : DEFAULT_MAX_FIX_EPISODES;
    limits[step.name] = gates;
  }
  return limits;
}

export interface BudgetView {
  namespace: string;
  name: string;
  window?: string;
  limitUSD?: number;
  status?: AgentBudgetStatus;
}

/** Who the spec says the task is; the cluster builds the same from its AgentTask object. */
export interface TaskIdentity {
  namespace: string;
  name: string;
  labels?: Record<string, string>;
  maxEpisodes?: number;
  maxCostUSD?: number;
  /** A cluster object's creationTimestamp: its start when no episode's is known. */
  createdAt?: string;
}

export function identityOfSpec(task: SpecTask): TaskIdentity {
  return {
    namespace: task.namespace,
    name: task.name,
    labels: task.labels,
    maxEpisodes: task.spec?.limits.maxEpisodes,
    maxCostUSD: task.spec?.limits.maxCostUSD,
  };
}

export function taskRow(id: TaskIdentity, status: AgentTaskStatus, extras: RowExtras = {}): TaskRow {
  const granted = status.resume?.grantedEpisodes ?? 0;
  const { pullRequest, origin } = extras;
  return {
    key: `${id.namespace}/${id.name}`,
    namespace: id.namespace,
    name: id.name,
    labels: { ...(id.labels ?? {}) },
    phase: status.phase ?? 'Pending',
    reason: status.reason,
    message: status.message,
    progress: status.progress?.summary,
    step: status.step?.summary,
    episodes: status.episodes,
    maxEpisodes: id.maxEpisodes === undefined ? undefined : id.maxEpisodes + granted,
    breaker: status.breaker?.state,
    costUSD: status.costUSD,
    maxCostUSD: id.maxCostUSD,
    lastProgressAt: status.breaker?.lastProgressAt,
    runningEpisode: status.currentEpisode?.number,
    pullRequest,
    ...origin,
    startedAt: startedAtOf(status, extras.firstStartedAt) ?? id.createdAt,
    finishedAt: isTerminal(status.phase) && !status.currentEpisode ? status.lastEpisode?.finishedAt : undefined,
  };
}

const PullRequestsSchema = AgentTriggerStatusSchema.shape.pullRequests;

/** The trigger that made the task, by its label: "namespace/name", in the task's namespace. */
export function triggerKeyOf(id: { namespace: string; labels?: Record<string, string> }): string | undefined {
  const trigger = id.labels?.[TRIGGER_LABEL];
  return trigger ? `${id.namespace}/${trigger}` : undefined;
}

function pullRequestsOf(triggerStatus: unknown): unknown {
  return (triggerStatus as { pullRequests?: unknown } | undefined)?.pullRequests;
}

/** Whether a trigger's status write changed its PR links (the only part of it a task row shows). */
export function pullRequestsChanged(before: unknown, after: unknown): boolean {
  return JSON.stringify(pullRequestsOf(before)) !== JSON.stringify(pullRequestsOf(after));
}

/** The task's entry in its trigger's status.pullRequests, read loosely (a cluster object is raw JSON). */
export function pullRequestOf(triggerStatus: unknown, task: string): PullRequestLink | undefined {
  const parsed = PullRequestsSchema.safeParse(pullRequestsOf(triggerStatus));
  return parsed.success ? parsed.data?.[task] : undefined;
}

/** A trigger as the Triggers page shows it (built by trigger-views.ts). */
export interface TriggerView {
  key: string;
  namespace: string;
  name: string;
  source: string;
  suspended: boolean;
  /** A schedule: its passes are ticks, not polls. */
  ticks: boolean;
  lastPollAt?: string;
  nextPollAt?: string;
  lastTick?: string;
  itemsSeen: number;
  tasksActive: number;
  tasksCreated: number;
  rateLimitedUntil?: string;
  lastError?: string;
  held: Array<{ number: number; title: string; url: string }>;
  heldOverflow: number;
  tasks: Array<{ key: string; namespace: string; name: string; phase: string }>;
  moreTasks: number;
  /** Where signed deliveries for it are taken, when this process serves hooks. */
  hookUrl?: string;
  /** The spec could not be read (a local file's errors). */
  problems: string[];
}

export type ConsoleEvent =
  | { type: 'tasks'; rows: TaskRow[] }
  | { type: 'log'; key: string; episode: number; size: number };

/** `note`: said beside a done action, e.g. that it waits for the next `episodic run` (no controller running). */
export type ResumeOutcome = { ok: true; token: string; note?: string } | { ok: false; status: number; message: string };
export type ActionOutcome = { ok: true; note?: string } | { ok: false; status: number; message: string };

/** What the HTTP server reads from: the state dir locally, the informer cache on a cluster. */
export interface ConsoleSource {
  rows(): TaskRow[];
  detail(namespace: string, name: string): Promise<TaskDetail | undefined>;
  budgets(): Promise<BudgetView[]>;
  /** Every AgentTrigger with its status and tasks (trigger-views.ts). */
  triggers(): Promise<TriggerView[]>;
  /** The episode's log (a file locally, a pod's on a cluster), rendered, followed while it runs; `signal` ends it. */
  episodeLog(
    namespace: string,
    name: string,
    episode: number,
    signal: AbortSignal,
    req?: LogRequest,
  ): Promise<EpisodeLog>;
  resume(namespace: string, name: string, by: string, episodes?: number): Promise<ResumeOutcome>;
  /** Suspend or Unsuspend: sets the task's suspend hold, never its spec. */
  setHold(namespace: string, name: string, hold: SuspendHold): Promise<ActionOutcome>;
  subscribe(listener: (event: ConsoleEvent) => void): () => void;
  close(): Promise<void>;
}
