// Where spawn and send change reconcile()'s decisions (issue 20), as three hooks: before an episode starts
// (wait for children, the family's cost cap, wait for a message), while one runs (interrupt by a message),
// and at a start (record which messages the episode gets). The loop gathers SpawnFacts; without them
// (a controller that does not apply these ops) nothing here changes a decision.
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import type { Message } from '../api/spawn-fields.ts';
import { waitForChildren } from './children.ts';
import type { ChildView } from './children.ts';
import { RUNNING_RECHECK_MS } from './budget.ts';
import { FAMILY_CAP_STOP, FAMILY_CAP_WAIT, judgeFamilyCaps } from './family-cap.ts';
import type { FamilyCap } from './family-cap.ts';
import { deliver, wakeDecision } from './mail.ts';

export interface SpawnFacts {
  /** The tasks this task spawned that exist now, with their phase and spend. */
  children: readonly ChildView[];
  /** Its mailbox, oldest first. */
  waiting: readonly Message[];
  /** The mailbox was not read (the status the pass began with reads none): `waiting` is empty for that. */
  mailboxUnread?: true;
  /** The maxCostUSD of each ancestor, and its own when it has children: each counts the whole family (family-cap.ts). */
  caps?: readonly FamilyCap[];
}

type Spec = AgentTaskSpec;

/**
 * Arrivals wake a task through MailboxEvents; this slow resync of a task waiting for a message (or running
 * with interrupt) is the safety net for a lost event (an inotify queue overflow, a file system without
 * inotify, a mailbox ConfigMap without its label): a minute bounds such a delay at one read a minute a task.
 */
export const MAILBOX_RESYNC_MS = 60_000;

export type Hold = { phase: 'Waiting' | 'NeedsReview'; reason: string; message: string; recheckMs?: number };

/**
 * Why no episode may start now, or undefined. A family cap that is spent stops the task first; children next:
 * a parent waiting for them has no news to read, nor a running sibling's cost to wait for.
 */
export function spawnHold(status: AgentTaskStatus, spec: Spec, facts: SpawnFacts | undefined): Hold | undefined {
  if (!facts) return undefined;
  const family = judgeFamilyCaps(facts.caps ?? [], status, spec.limits.expectedEpisodeCostUSD);
  if (family.kind === 'stop') return { phase: 'NeedsReview', reason: FAMILY_CAP_STOP, message: family.message };
  const children = waitForChildren(spec, facts.children);
  if (children) return children;
  // Woken when a family member's spend changes (spawn-loop.ts); the recheck is the safety net.
  if (family.kind === 'wait')
    return { phase: 'Waiting', reason: FAMILY_CAP_WAIT, message: family.message, recheckMs: RUNNING_RECHECK_MS };
  const wake = wakeDecision({
    wake: spec.wake,
    interrupt: spec.interrupt,
    episodes: status.episodes,
    waiting: facts.waiting,
    mailbox: status.mailbox,
  });
  return wake.kind === 'await' ? { ...wake, recheckMs: MAILBOX_RESYNC_MS } : undefined;
}

/** The running episode to stop for a message it did not get (spec.interrupt), or undefined. */
export function spawnInterrupt(
  status: AgentTaskStatus,
  running: number,
  spec: Spec,
  facts: SpawnFacts | undefined,
): { number: number; message: string } | undefined {
  if (!facts || !spec.interrupt) return undefined;
  const d = wakeDecision({
    wake: spec.wake,
    interrupt: true,
    running,
    episodes: status.episodes,
    waiting: facts.waiting,
    mailbox: status.mailbox?.episode === running ? status.mailbox : undefined,
  });
  return d.kind === 'interrupt' ? d : undefined;
}

/** The status of a starting episode with the messages it gets on record (before it starts). */
export function withDelivery(status: AgentTaskStatus, number: number, facts: SpawnFacts | undefined): AgentTaskStatus {
  if (!facts) return status;
  const { mailbox } = deliver(facts.waiting, status.mailbox, number);
  return mailbox ? { ...status, mailbox } : status;
}
