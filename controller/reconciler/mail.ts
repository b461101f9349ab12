// The pure rules of messages (send, wake: onMessage, interrupt): what an episode is given ({{messages}}),
// when a task waits for one (Waiting, AwaitingMessage), when one stops a running episode, and which
// delivered messages are acknowledged. Delivery is on record before the episode starts (status.mailbox);
// acknowledgement follows its end; so across a kill -9 a message reaches exactly one ended episode.
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import { clip } from '../api/bounds.ts';
import type { MailboxStatus, Message } from '../api/spawn-fields.ts';
import { effectiveSpec } from '../api/steps.ts';
import { framePrompt } from './stack.ts';

/** Messages delivered to one episode at most; the rest wait for the next (status.mailbox.delivered's bound). */
export const DELIVERED_MAX = 64;

/** {{messages}}: oldest first, each with its sender and time. */
export function renderMessages(messages: readonly Message[]): string {
  return messages.map((m) => `from ${m.from} at ${m.at}:\n${m.text}`).join('\n\n');
}

/**
 * What episode `episode` gets: the waiting messages not delivered before (an ended episode's are only
 * acknowledged after), oldest first and bounded, and the status.mailbox to record before it starts.
 */
export function deliver(
  waiting: readonly Message[],
  previous: MailboxStatus | undefined,
  episode: number,
): { messages: Message[]; mailbox: MailboxStatus | undefined } {
  const messages = undelivered(waiting, previous).slice(0, DELIVERED_MAX);
  if (messages.length === 0) return { messages, mailbox: undefined };
  return { messages, mailbox: { episode, delivered: messages.map((m) => m.id) } };
}

/** Ids to acknowledge: those delivered to an episode that is no longer running. */
export function toAcknowledge(mailbox: MailboxStatus | undefined, running: number | undefined): string[] {
  if (!mailbox || mailbox.episode === running) return [];
  return mailbox.delivered;
}

/** Messages not yet delivered to the running (or last) episode: they are news. */
export function undelivered(waiting: readonly Message[], mailbox: MailboxStatus | undefined): Message[] {
  const seen = new Set(mailbox?.delivered ?? []);
  return waiting.filter((m) => !seen.has(m.id));
}

export interface WakeFacts {
  wake: 'grind' | 'onMessage';
  interrupt: boolean;
  /** The running episode's number, if one runs. */
  running?: number;
  /** Episodes so far: the first one never waits for a message. */
  episodes: number;
  /** Messages in the mailbox now, oldest first. */
  waiting: readonly Message[];
  mailbox?: MailboxStatus;
}

export type WakeDecision =
  | { kind: 'go' }
  | { kind: 'await'; phase: 'Waiting'; reason: 'AwaitingMessage'; message: string }
  | { kind: 'interrupt'; number: number; message: string };

/**
 * Between episodes: onMessage waits until a message arrives (receive). During one: with interrupt, a message
 * it did not get stops it (trap; the stop is a cancel, not a failure, and the next episode gets the message).
 */
export function wakeDecision(f: WakeFacts): WakeDecision {
  const news = undelivered(f.waiting, f.mailbox);
  if (f.running !== undefined) {
    if (!f.interrupt || news.length === 0) return { kind: 'go' };
    const from = clip(news.map((m) => m.from).join(', '), 100);
    return {
      kind: 'interrupt',
      number: f.running,
      message: `episode ${f.running} interrupted by a message from ${from}`,
    };
  }
  if (f.wake === 'grind' || f.episodes === 0 || news.length > 0) return { kind: 'go' };
  return {
    kind: 'await',
    phase: 'Waiting',
    reason: 'AwaitingMessage',
    message: 'waiting for a message (wake: onMessage)',
  };
}

const MESSAGES_PLACEHOLDER = /\{\{\s*messages\s*\}\}/;

/**
 * Whether the task's mailbox must be read for the episode that would start from `status`: it waits for or is
 * interrupted by messages, or the prompt that episode renders — the current step's prompt, the stack's
 * frames, or the task's prompt — names {{messages}}, or is a promptFile (its text is read only at the start).
 * Every other task is spared a mailbox read per pass.
 */
export function readsMailbox(spec: AgentTaskSpec | undefined, status: AgentTaskStatus | undefined): boolean {
  if (!spec) return false;
  if (spec.wake === 'onMessage' || spec.interrupt) return true;
  if (spec.stack) return (status?.stack?.frames ?? spec.stack).some((f) => MESSAGES_PLACEHOLDER.test(framePrompt(f)));
  const next = effectiveSpec(spec, status);
  return next.promptFile !== undefined || MESSAGES_PLACEHOLDER.test(next.prompt ?? '');
}
