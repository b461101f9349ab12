// A task's blackboard (its namespace's board, what {{bb.KEY}} reads) and the messages waiting in its mailbox,
// as the task page shows them: bounded here, before they leave the server (agent text, any size it was let be).
import { clip } from '../api/bounds.ts';
import type { Message } from '../api/spawn-fields.ts';
import { readLocalBlackboard } from '../ops/local-blackboard.ts';
import { LocalMailboxes } from '../sinks/local/mailboxes.ts';
import { readClusterBlackboard } from '../ops/cluster-blackboard.ts';
import { KubeMailboxes } from '../sinks/cluster/mailboxes.ts';
import type { KubeClient } from '../kube/kube-client.ts';

export const BOARD_KEYS_SHOWN = 50;
export const BOARD_VALUE_SHOWN = 500;
export const MESSAGES_SHOWN = 20;
export const MESSAGE_TEXT_SHOWN = 1000;

export interface BoardView {
  entries: Array<{ key: string; value: string }>;
  /** Keys past BOARD_KEYS_SHOWN. */
  more: number;
}

export interface MailView {
  messages: Array<{ id: string; from: string; at: string; text: string }>;
  more: number;
}

/** The board's keys in name order, the first BOARD_KEYS_SHOWN, values cut. */
export function boardView(entries: Readonly<Record<string, string>>): BoardView {
  const keys = Object.keys(entries).sort();
  return {
    entries: keys.slice(0, BOARD_KEYS_SHOWN).map((key) => ({
      key: clip(key, BOARD_VALUE_SHOWN),
      value: clip(String(entries[key]), BOARD_VALUE_SHOWN),
    })),
    more: Math.max(0, keys.length - BOARD_KEYS_SHOWN),
  };
}

/** Waiting messages oldest first (as the agent reads them), the first MESSAGES_SHOWN, texts cut. */
export function mailView(messages: readonly Message[]): MailView {
  return {
    messages: messages.slice(0, MESSAGES_SHOWN).map((m) => ({
      id: clip(String(m.id), 80),
      from: clip(String(m.from), 80),
      at: clip(String(m.at), 40),
      text: clip(String(m.text), MESSAGE_TEXT_SHOWN),
    })),
    more: Math.max(0, messages.length - MESSAGES_SHOWN),
  };
}

export interface BoardAndMail {
  blackboard: BoardView;
  mailbox: MailView;
}

/** The local state dir's board and mailbox for one task. */
export async function localBoardAndMail(stateDir: string, namespace: string, name: string): Promise<BoardAndMail> {
  const board = readLocalBlackboard(stateDir, namespace);
  const messages = await new LocalMailboxes(stateDir).read(namespace, name);
  return { blackboard: boardView(board.entries), mailbox: mailView(messages) };
}

/** On a cluster: ConfigMap episodic-blackboard of the namespace and the task's episodic-mailbox-NAME, read
 * when its page is opened (two gets; neither is in an informer cache). */
export async function clusterBoardAndMail(client: KubeClient, namespace: string, name: string): Promise<BoardAndMail> {
  const [board, messages] = await Promise.all([
    readClusterBlackboard(client, namespace),
    new KubeMailboxes(client).read(namespace, name),
  ]);
  return { blackboard: boardView(board.entries), mailbox: mailView(messages) };
}
