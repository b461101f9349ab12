// What reconcileTrigger (trigger-reconcile.ts) takes and gives: the facts a trigger's runner gathered, the
// lookups it asks for when a fact is missing, and the actions it hands back, in the order they are done.
import type { AgentTaskStatus } from '../api/agent-task-status.ts';
import type { AgentTriggerSpec, AgentTriggerStatus } from '../api/agent-trigger.ts';
import type { ForgeItem, PermissionAnswer } from '../api/forge-item.ts';
import type { Poll } from './trigger-cursor.ts';
import type { ExistingTask, ItemSeen } from './trigger-items.ts';
import type { TaskReport } from './trigger-report-plan.ts';
import type { ReportItem } from './trigger-report.ts';
import type { ResumeRequest } from './trigger-resume.ts';
import type { TriggerFailure } from './trigger-timing.ts';

/**
 * The kind of pass: `timer` (a schedule's tick, a forge poll, a webhook source's pass), `delivery` (items a
 * webhook delivered), `report` (reports only, once `run` settled).
 */
export type TriggerPass = 'timer' | 'delivery' | 'report';

/** A task the trigger created that still exists, with its status as recorded (undefined: none yet). */
export interface TriggerTask extends ExistingTask {
  namespace: string;
  status?: AgentTaskStatus;
}

export interface TriggerFacts {
  trigger: { name: string; spec: AgentTriggerSpec };
  pass: TriggerPass;
  /** The status on record (after a failure: as far as the pass got). */
  status: AgentTriggerStatus;
  now: Date;
  /** In [0, 1]: the backoff's jitter. */
  jitter: number;
  /** Failed passes in a row before this one. */
  failures: number;
  /**
   * A timer pass's second stage: spec.report over the tasks as they are once the first stage's were created
   * (listed again, so a new task's first phase is reported, not a guess).
   */
  stage?: 'reports';
  /** The pass failed (gathering facts or doing an action): only the backoff is decided. */
  failure?: TriggerFailure;
  tasks: TriggerTask[];
  /** A forge source's poll. */
  poll?: Poll;
  /** What the last poll held back for maxConcurrency: a 304 must not forget it. */
  heldSeen?: ItemSeen[];
  /** A webhook delivery's items. */
  delivered?: ItemSeen[];
  /** The forge the trigger polls or reports through, once opened: whether it has a token. */
  forge?: { token: boolean };
  /** The runner can hand a resume request on (a request file, the resume annotations). */
  canResume: boolean;
  /** Repo roles looked up (undefined: none on the repo; `unknown`: the token could not read it, and why). */
  permissions: ReadonlyMap<string, PermissionAnswer>;
  /** Pull requests read for their head branch. */
  pullRequests: ReadonlyMap<number, Pick<ForgeItem, 'headBranch' | 'headRepo'>>;
  /** Items read as the forge has them now (a publish's PR title). */
  items: ReadonlyMap<number, ReportItem>;
}

/** A fact the decision needs and the runner has not gathered: fetched, then reconcileTrigger runs again. */
export type TriggerLookup =
  | { kind: 'forge' }
  | { kind: 'permission'; user: string }
  | { kind: 'pullRequest'; number: number }
  | { kind: 'item'; number: number; pullRequest: boolean };

export type TriggerAction =
  | { kind: 'log'; level: 'info' | 'warn'; fields: Record<string, unknown>; message: string }
  | { kind: 'resume'; namespace: string; name: string; request: ResumeRequest }
  | { kind: 'delete'; name: string }
  | { kind: 'create'; name: string; spec: Record<string, unknown>; labels: Record<string, string> }
  /** An item that gets no task: the reason in its report comment (one, edited in place). */
  | { kind: 'refuse'; number: number; key: string; body: string }
  /**
   * The pass's outcome on the status (cursor, counts, held items), once what came before it was done; a forge
   * poll's items held for maxConcurrency are kept for the next poll (its 304 lists nothing).
   */
  | { kind: 'record'; status: Partial<AgentTriggerStatus>; poll?: { held: ItemSeen[] } }
  | { kind: 'report'; report: TaskReport }
  /** The pass cannot go on (spec.report without a token): what was done so far is kept, then the backoff. */
  | { kind: 'fail'; message: string };

/** What an action came to, as recordOutcome folds it into the status. */
export type ActionOutcome =
  | { kind: 'created' }
  | { kind: 'exists' }
  | { kind: 'reported'; pullRequest?: { number: number; url: string } }
  | { kind: 'done' };

export interface TriggerDecision {
  /** The status the actions start from (recordOutcome folds each one's outcome in); undefined: leave it. */
  status: AgentTriggerStatus | undefined;
  actions: TriggerAction[];
  /** When the next timer pass is due (timer passes only). */
  nextPassAt?: Date;
  /** Facts still missing: nothing is done until they are gathered. */
  lookups: TriggerLookup[];
  /** Failed passes in a row after this one. */
  failures: number;
  /** Then the reports stage: the tasks listed again, reconcileTrigger asked with stage 'reports'. */
  reportsNext?: boolean;
}
