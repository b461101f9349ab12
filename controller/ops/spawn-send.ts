// Carrying out spawn and send ops (issue 20) for both modes: each is an op handler over the mode's
// CreatedTasks and Mailboxes (the OpsApplier hands it an episode's ops of its kind). Both are idempotent per
// (task, episode): a child has a deterministic name and a message a deterministic id, so ops applied again
// after a kill -9 make nothing twice. An op that may not apply is rejected with a message, never thrown.
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { systemClock } from '../core/clock.ts';
import type { Clock } from '../core/clock.ts';
import type { CreatedTasks, TaskOwner } from '../core/created-tasks.ts';
import type { Mailboxes } from '../core/mailboxes.ts';
import type { AppliedOps, DesiredTask } from '../core/ports.ts';
import { planChild } from '../reconciler/spawn.ts';

import type { OpHandler } from './ops-applier.ts';

export type { OpHandler } from './ops-applier.ts';
type Rejection = AppliedOps['rejected'][number];

export interface SpawnSendDeps<T extends DesiredTask> {
  created: CreatedTasks;
  mailboxes: Mailboxes;
  /** The task as an owner (local: its spec file; cluster: its uid). */
  ownerOf(task: T): TaskOwner;
  /** Whether a task of that name exists in the namespace: a message to no task is refused. */
  taskExists(namespace: string, name: string): boolean;
  /** The task's status as the loop last wrote it: a message's time is the end of the episode sending it. */
  status?(task: T): AgentTaskStatus | undefined;
  clock: Clock;
}

/** What a controller (either mode) hands over to get its spawn and send handlers. */
export interface SpawnSendWiring<T extends DesiredTask> {
  created: CreatedTasks;
  mailboxes: Mailboxes;
  ownerOf(task: T): TaskOwner;
  /** The controller's task source: a message to a task it does not have is refused. */
  tasks: { get(key: string): T | undefined };
  /** The controller's status sink, as the loop last wrote it. */
  statuses: { read(task: T): AgentTaskStatus | undefined };
  /** The controller's injected clock; the system clock when it has none. */
  clock?: Clock;
}

/** The one wiring of spawn and send handlers for both controllers (so neither can miss the injected clock). */
export function spawnAndSend<T extends DesiredTask>(
  w: SpawnSendWiring<T>,
): { spawn: OpHandler<T>; send: OpHandler<T> } {
  const deps: SpawnSendDeps<T> = {
    created: w.created,
    mailboxes: w.mailboxes,
    ownerOf: w.ownerOf,
    taskExists: (namespace, name) => w.tasks.get(`${namespace}/${name}`) !== undefined,
    status: (t) => w.statuses.read(t),
    clock: w.clock ?? systemClock,
  };
  return { spawn: spawnHandler(deps), send: sendHandler(deps) };
}

export function spawnHandler<T extends DesiredTask>(deps: SpawnSendDeps<T>): OpHandler<T> {
  return async (task, _episode, ops) => {
    const rejected: Rejection[] = [];
    if (!task.spec)
      return { rejected: ops.map((o, index) => ({ index, op: o.op, message: `${o.op}: the task has no valid spec` })) };
    const owner = deps.ownerOf(task);
    for (const [index, op] of ops.entries()) {
      if (op.op !== 'spawn') continue;
      const children = (await deps.created.list(owner)).map((c) => c.name);
      const plan = planChild({ name: task.name, spec: task.spec, labels: task.labels, children }, op);
      if (!plan.ok) {
        rejected.push({ index, op: 'spawn', message: plan.message });
        continue;
      }
      if (plan.existing) continue;
      const made = await deps.created.create(owner, plan.name, plan.spec, plan.labels);
      if (made.result === 'taken') rejected.push({ index, op: 'spawn', message: `spawn ${op.name}: ${made.message}` });
    }
    return { rejected };
  };
}

/**
 * Message ids: FROM.EPISODE.INDEX (the index among the episode's sends); their time the episode's end, so
 * ops applied again make the same message, which the target's mailbox knows even once it was delivered.
 */
export function sendHandler<T extends DesiredTask>(deps: SpawnSendDeps<T>): OpHandler<T> {
  return async (task, episode, ops) => {
    const rejected: Rejection[] = [];
    const last = deps.status?.(task)?.lastEpisode;
    const at = (last?.number === episode && last.finishedAt) || deps.clock.now().toISOString();
    let sends = -1;
    for (const [index, op] of ops.entries()) {
      if (op.op !== 'send') continue;
      sends++;
      if (!deps.taskExists(task.namespace, op.to)) {
        rejected.push({ index, op: 'send', message: `send to ${op.to}: no such task in namespace ${task.namespace}` });
        continue;
      }
      const id = `${task.name}.${episode}.${sends}`;
      const sent = await deps.mailboxes.send(task.namespace, op.to, { id, from: task.name, at, text: op.message });
      if (sent.result === 'refused') rejected.push({ index, op: 'send', message: `send to ${op.to}: ${sent.message}` });
    }
    return { rejected };
  };
}
