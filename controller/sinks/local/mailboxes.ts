// Local mailboxes: STATE/mailboxes/NAMESPACE/TASK/ID.json, one file per message, each made by a hard link of
// a finished temporary file (whole or absent; an id again is not a second message). A person's `episodic
// send` and the controller write at once without a lock; the bound is checked before the link, so two
// senders racing may pass it by one message each (documented). DIR/.marks holds the mailbox's SentMarks,
// written right after the message in the same turn (no other pass runs between; a crash between the two
// leaves the message, which is "exists" too).
import { clip, QUOTED_NAME_MAX } from '../../api/bounds.ts';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  MESSAGE_ID,
  markSent,
  oldestFirst,
  parseSentMarks,
  refusal,
  sentBefore,
  validNames,
} from '../../core/mailboxes.ts';
import type { Mailboxes, SendOutcome, SentMarks } from '../../core/mailboxes.ts';
import type { Message } from '../../api/spawn-fields.ts';
import { createFileOnce, writeFileAtomicSync } from '../../util/atomic-write.ts';
import { mailboxDir } from '../../util/state-layout.ts';

const MARKS = '.marks';

export class LocalMailboxes implements Mailboxes {
  private readonly stateDir: string;

  constructor(stateDir: string) {
    this.stateDir = stateDir;
  }

  async send(namespace: string, to: string, message: Message): Promise<SendOutcome> {
    if (!validNames(namespace, to))
      return { result: 'refused', message: `${clip(to, QUOTED_NAME_MAX)}: not a task name` };
    const dir = this.dir(namespace, to);
    const file = join(dir, `${message.id}.json`);
    if (MESSAGE_ID.test(message.id) && existsSync(file)) return { result: 'exists' };
    const marks = readMarks(dir);
    if (sentBefore(marks, message)) return { result: 'exists' };
    const why = refusal(await this.read(namespace, to), message);
    if (why) return { result: 'refused', message: why };
    if (createFileOnce(file, JSON.stringify(message)) === 'exists') return { result: 'exists' };
    const marked = markSent(marks, message);
    if (marked) writeFileAtomicSync(join(dir, MARKS), JSON.stringify(marked), { flush: true });
    return { result: 'sent' };
  }

  async read(namespace: string, task: string): Promise<Message[]> {
    if (!validNames(namespace, task)) return [];
    const dir = this.dir(namespace, task);
    if (!existsSync(dir)) return [];
    const messages: Message[] = [];
    for (const f of readdirSync(dir)) {
      if (!f.endsWith('.json')) continue;
      try {
        messages.push(JSON.parse(readFileSync(join(dir, f), 'utf8')) as Message);
      } catch {
        // acknowledged (removed) between readdir and read
      }
    }
    return oldestFirst(messages);
  }

  async ack(namespace: string, task: string, ids: readonly string[]): Promise<void> {
    if (!validNames(namespace, task)) return;
    for (const id of ids)
      if (MESSAGE_ID.test(id)) rmSync(join(this.dir(namespace, task), `${id}.json`), { force: true });
  }

  async drop(namespace: string, task: string): Promise<void> {
    if (validNames(namespace, task)) rmSync(this.dir(namespace, task), { recursive: true, force: true });
  }

  private dir(namespace: string, task: string): string {
    return mailboxDir(this.stateDir, namespace, task);
  }
}

function readMarks(dir: string): SentMarks {
  const file = join(dir, MARKS);
  return parseSentMarks(existsSync(file) ? readFileSync(file, 'utf8') : undefined);
}
