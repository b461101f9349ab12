// Cluster mailboxes: a ConfigMap `episodic-mailbox-TASK` per task, one data key per message (its id), the
// value the message as JSON. Never spec (people own it) nor status (the controller writes it whole, and a
// person's `episodic send --kubeconfig` must not race it). A send is a merge patch guarded by the
// ConfigMap's resourceVersion, so the bound holds under concurrent senders (a conflict reads and tries again).
// The mailbox's SentMarks live in annotation episodic.dev/sent, changed in the same patch as the message.
import { markSent, oldestFirst, parseSentMarks, refusal, sentBefore, validNames } from '../../core/mailboxes.ts';
import type { Mailboxes, Message, SendOutcome, SentMarks } from '../../core/mailboxes.ts';
import { isStatus } from '../../kube/kube-client.ts';
import type { KubeClient } from '../../kube/kube-client.ts';
import { TASK_LABEL } from '../../kube/names.ts';

export const MAILBOX_LABEL = 'episodic.dev/mailbox';
export const SENT_ANNOTATION = 'episodic.dev/sent';
const CONFLICT_TRIES = 5;

interface ConfigMap {
  metadata: { name: string; resourceVersion?: string; annotations?: Record<string, string> };
  data?: Record<string, string>;
}

export function mailboxName(task: string): string {
  return `episodic-mailbox-${task}`;
}

export class KubeMailboxes implements Mailboxes {
  private readonly client: KubeClient;

  constructor(client: KubeClient) {
    this.client = client;
  }

  async send(namespace: string, to: string, message: Message): Promise<SendOutcome> {
    if (!validNames(namespace, to)) return { result: 'refused', message: `${to.slice(0, 70)}: not a task name` };
    for (let attempt = 1; ; attempt++) {
      const cm = await this.get(namespace, to);
      const marks = marksOf(cm);
      if (cm?.data?.[message.id] !== undefined || sentBefore(marks, message)) return { result: 'exists' };
      const why = refusal(messagesOf(cm), message);
      if (why) return { result: 'refused', message: why };
      const value = JSON.stringify({ from: message.from, at: message.at, text: message.text });
      const marked = markSent(marks, message);
      const annotations = marked ? { [SENT_ANNOTATION]: JSON.stringify(marked) } : undefined;
      try {
        if (!cm) await this.create(namespace, to, { [message.id]: value }, annotations);
        else {
          const metadata = { resourceVersion: cm.metadata.resourceVersion, ...(annotations ? { annotations } : {}) };
          await this.client.mergePatch(path(namespace, to), { metadata, data: { [message.id]: value } }, 'work');
        }
        return { result: 'sent' };
      } catch (err) {
        if (!(isStatus(err, 409) && attempt < CONFLICT_TRIES)) throw err;
      }
    }
  }

  async read(namespace: string, task: string): Promise<Message[]> {
    if (!validNames(namespace, task)) return [];
    return oldestFirst(messagesOf(await this.get(namespace, task)));
  }

  async ack(namespace: string, task: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0 || !validNames(namespace, task)) return;
    const data = Object.fromEntries(ids.map((id) => [id, null]));
    try {
      await this.client.mergePatch(path(namespace, task), { data }, 'work');
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
  }

  async drop(namespace: string, task: string): Promise<void> {
    if (!validNames(namespace, task)) return;
    try {
      await this.client.delete(path(namespace, task), undefined, 'work');
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
  }

  private async get(namespace: string, task: string): Promise<ConfigMap | undefined> {
    try {
      return await this.client.get<ConfigMap>(path(namespace, task), undefined, 'work');
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  }

  private async create(
    namespace: string,
    task: string,
    data: Record<string, string>,
    annotations?: Record<string, string>,
  ): Promise<void> {
    const labels = { [MAILBOX_LABEL]: 'true', [TASK_LABEL]: task };
    const body = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: mailboxName(task), namespace, labels, ...(annotations ? { annotations } : {}) },
      data,
    };
    await this.client.create(`/api/v1/namespaces/${namespace}/configmaps`, body, 'work');
  }
}

function path(namespace: string, task: string): string {
  return `/api/v1/namespaces/${namespace}/configmaps/${mailboxName(task)}`;
}

function messagesOf(cm: ConfigMap | undefined): Message[] {
  return Object.entries(cm?.data ?? {}).flatMap(([id, value]) => {
    try {
      const m = JSON.parse(value) as Omit<Message, 'id'>;
      return [{ id, from: String(m.from), at: String(m.at), text: String(m.text) }];
    } catch {
      return [];
    }
  });
}

function marksOf(cm: ConfigMap | undefined): SentMarks {
  return parseSentMarks(cm?.metadata.annotations?.[SENT_ANNOTATION]);
}
