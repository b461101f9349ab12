// Mailboxes for `send` (agent ops and `episodic send`): one per task, never in its spec. Locally a directory
// of message files under the state dir; on a cluster a ConfigMap per task (the controller never writes
// spec, and status is the controller's alone while people send too). A message's id is chosen by its sender
// and deterministic for an agent's op ("FROM.EPISODE.INDEX"), so applying an episode's ops again after a
// kill -9 does not deliver twice. Delivered messages are acknowledged (removed) once the episode that got
// them has ended; until then they stay, so a crash never loses one. A mailbox also keeps, per sending task,
// the newest op message it took (SentMarks): ops applied again after their message was delivered and
// acknowledged (a retried or restarted ApplyOps) find it there and send nothing.

import type { Message } from '../api/spawn-fields.ts';

/** Messages a mailbox holds at most; a send past it is refused ("full"). */
export const MAILBOX_MESSAGES_MAX = 32;
/** Characters of message text a mailbox holds at most (a ConfigMap's 1 MiB stays far off). */
export const MAILBOX_CHARS_MAX = 64 * 1024;
/** Ids are ConfigMap data keys and file names: no path, no other namespace. */
export const MESSAGE_ID = /^[a-z0-9][a-z0-9.-]{0,199}$/;

/** Task and namespace names as both modes take them (RFC 1123 labels): never a path such as `../x`. */
export const TASK_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Whether the names lead to a mailbox at all: they become file paths and API paths. */
export function validNames(namespace: string, task: string): boolean {
  return TASK_NAME.test(namespace) && TASK_NAME.test(task);
}

export type SendOutcome = { result: 'sent' } | { result: 'exists' } | { result: 'refused'; message: string };

export interface Mailboxes {
  /** Appends to task `to`'s mailbox in `namespace`; the same id again is "exists". */
  send(namespace: string, to: string, message: Message): Promise<SendOutcome>;
  /** The messages waiting, oldest first. */
  read(namespace: string, task: string): Promise<Message[]>;
  /** Removes delivered messages; ids already gone are fine. */
  ack(namespace: string, task: string, ids: readonly string[]): Promise<void>;
  /** The task is gone: its mailbox too. */
  drop(namespace: string, task: string): Promise<void>;
}

/**
 * Mailbox arrivals as events (cluster: an informer on mailbox ConfigMaps; locally: a watch on the mailbox
 * directories), so a task waiting for a message, or running with interrupt, is looked at when one comes.
 * Events only: the loop enqueues the task and the reconciler reads the mailbox and decides.
 */
export interface MailboxEvents {
  /** Calls onArrival("namespace/task") whenever a message may have arrived in that task's mailbox. */
  subscribe(onArrival: (key: string) => void): void;
}

/** Why a message may not go into a mailbox holding `held`, or undefined when it may. */
export function refusal(held: readonly Message[], message: Message): string | undefined {
  if (!MESSAGE_ID.test(message.id)) return `message id "${message.id.slice(0, 40)}" is not a lowercase name`;
  if (held.length >= MAILBOX_MESSAGES_MAX) return `mailbox full: ${MAILBOX_MESSAGES_MAX} messages waiting`;
  const chars = held.reduce((n, m) => n + m.text.length, 0) + message.text.length;
  if (chars > MAILBOX_CHARS_MAX) return `mailbox full: more than ${MAILBOX_CHARS_MAX} characters waiting`;
  return undefined;
}

export function oldestFirst(messages: Message[]): Message[] {
  return messages.sort((a, b) => (a.at === b.at ? a.id.localeCompare(b.id) : a.at < b.at ? -1 : 1));
}

/** Where an op message stands in its sender's sequence: the end of the episode that sent it, then its id. */
export interface SentMark {
  at: string;
  episode: number;
  index: number;
}
/** Sending task → the newest op message a mailbox took from it. */
export type SentMarks = Record<string, SentMark>;

/**
 * An op message's mark: its id is FROM.EPISODE.INDEX and its time the end of that episode, the same each
 * time the episode's ops are applied; a task made again under the name sends with later times. A person's
 * message has none.
 */
function markOf(message: Message): SentMark | undefined {
  if (!message.id.startsWith(`${message.from}.`)) return undefined;
  const match = /^(\d{1,9})\.(\d{1,9})$/.exec(message.id.slice(message.from.length + 1));
  return match ? { at: message.at, episode: Number(match[1]), index: Number(match[2]) } : undefined;
}

function notAfter(a: SentMark, b: SentMark): boolean {
  if (a.at !== b.at) return a.at < b.at;
  return a.episode < b.episode || (a.episode === b.episode && a.index <= b.index);
}

/**
 * Whether the mailbox took this op message before (it may have been delivered and removed since): a
 * sender's ops reach a mailbox in order, so its newest mark covers every message before it.
 */
export function sentBefore(marks: Readonly<SentMarks>, message: Message): boolean {
  const mark = markOf(message);
  const newest = marks[message.from];
  return mark !== undefined && isMark(newest) && notAfter(mark, newest);
}

/** The marks once the mailbox took `message`; undefined when it is no op message (a person's). */
export function markSent(marks: Readonly<SentMarks>, message: Message): SentMarks | undefined {
  const mark = markOf(message);
  return mark && { ...marks, [message.from]: mark };
}

/** A mailbox's marks as stored (a file, an annotation): anything else reads as none. */
export function parseSentMarks(text: string | undefined): SentMarks {
  try {
    const parsed: unknown = JSON.parse(text ?? '{}');
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as SentMarks) : {};
  } catch {
    return {};
  }
}

/** Marks are read back from a file or an annotation a person may edit. */
function isMark(v: unknown): v is SentMark {
  const m = v as SentMark | undefined;
  return typeof m?.at === 'string' && Number.isInteger(m.episode) && Number.isInteger(m.index);
}
