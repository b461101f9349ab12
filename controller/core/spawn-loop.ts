// The loop's part of spawn and send: gathering a task's SpawnFacts (its children from the source and the
// sink, its mailbox), the placeholders its next episode gets ({{children}}, {{messages}}), acknowledging
// messages once the episode that got them has ended (after that end is on record), and passing a child's
// change of phase to its parent, which may be waiting for it, and of spend to every ancestor, whose cap counts it.
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { OWNER_LABELS } from '../api/spawn-fields.ts';
import type { Mailboxes } from './mailboxes.ts';
import type { DesiredTask, StatusSink, TaskSource } from './ports.ts';
import { renderChildren, treeCost } from '../reconciler/children.ts';
import type { ChildView } from '../reconciler/children.ts';
import { readsMailbox, renderMessages, toAcknowledge } from '../reconciler/mail.ts';
import type { SpawnFacts } from '../reconciler/spawn-decide.ts';

const PARENT = OWNER_LABELS.AgentTask;

export class SpawnLoop<T extends DesiredTask> {
  private readonly source: TaskSource<T>;
  private readonly sink: StatusSink<T>;
  private readonly mailboxes: Mailboxes;

  /** Parent key → its children's keys; built on first use, then kept by the source's change notices. */
  private index: Map<string, Set<string>> | undefined;
  private readonly parentOf = new Map<string, string>();

  constructor(opts: { source: TaskSource<T>; sink: StatusSink<T>; mailboxes: Mailboxes }) {
    this.source = opts.source;
    this.sink = opts.sink;
    this.mailboxes = opts.mailboxes;
    opts.source.subscribe((key) => this.index && this.reindex(key));
  }

  /**
   * A task's children, and its mailbox when the episode that would start from `status` can use it
   * (reconciler/mail.ts readsMailbox): every other task is spared a read per pass.
   */
  async facts(task: T, status: AgentTaskStatus | undefined): Promise<SpawnFacts> {
    return {
      children: this.children(task),
      waiting: readsMailbox(task.spec, status) ? await this.mailboxes.read(task.namespace, task.name) : [],
    };
  }

  /** {{children}} and {{messages}} of the episode starting with `status` (its messages are in status.mailbox). */
  promptVars(facts: SpawnFacts, status: AgentTaskStatus): Record<string, string> {
    const number = status.currentEpisode?.number;
    const ids = new Set(status.mailbox?.episode === number ? status.mailbox?.delivered : []);
    return {
      children: renderChildren(facts.children),
      messages: renderMessages(facts.waiting.filter((m) => ids.has(m.id))),
    };
  }

  /** After the pass's status is written: acknowledge what an ended episode got; wake a parent that may wait. */
  async afterWrite(
    task: T,
    before: AgentTaskStatus,
    after: AgentTaskStatus,
    facts: SpawnFacts | undefined,
    requeue: (key: string) => void,
  ): Promise<void> {
    const ack = toAcknowledge(after.mailbox, after.currentEpisode?.number);
    if (facts && ack.some((id) => facts.waiting.some((m) => m.id === id)))
      await this.mailboxes.ack(task.namespace, task.name, ack);
    const [parent, ...above] = this.ancestors(task);
    const spent = before.costUSD !== after.costUSD;
    if (parent && (spent || before.phase !== after.phase)) requeue(parent);
    // Every ancestor's cap counts this task's spend (treeCost); only the parent waits for its phase.
    if (spent) for (const key of above) requeue(key);
  }

  /** The keys of the task's parent, grandparent, …: nearest first, each once (labels could loop). */
  private ancestors(task: T): string[] {
    const keys: string[] = [];
    for (let t: T | undefined = task; t?.labels?.[PARENT]; ) {
      const key = `${t.namespace}/${t.labels[PARENT]}`;
      if (key === task.key || keys.includes(key)) break;
      keys.push(key);
      t = this.source.get(key);
    }
    return keys;
  }

  /** The tasks in the namespace that name this one as parent, as the sink has their status. */
  private children(task: T): ChildView[] {
    if (!this.index) {
      this.index = new Map();
      for (const t of this.source.list()) this.reindex(t.key);
    }
    const out: ChildView[] = [];
    for (const key of this.index.get(task.key) ?? []) {
      const t = this.source.get(key);
      if (!t) continue;
      const status = this.sink.read(t);
      out.push({
        name: t.name,
        phase: status?.phase,
        costUSD: treeCost(
          key,
          (k) => this.ownSpend(k),
          (k) => this.index?.get(k) ?? [],
        ),
        outputs: status?.outputs,
        lastMessage: status?.lastEpisode?.message,
      });
    }
    return out;
  }

  private ownSpend(key: string): number {
    const t = this.source.get(key);
    return (t && this.sink.read(t)?.costUSD) ?? 0;
  }

  private reindex(key: string): void {
    const index = this.index ?? new Map<string, Set<string>>();
    const old = this.parentOf.get(key);
    if (old) index.get(old)?.delete(key);
    const t = this.source.get(key);
    const parent = t?.labels?.[PARENT];
    if (!t || !parent) return void this.parentOf.delete(key);
    const parentKey = `${t.namespace}/${parent}`;
    this.parentOf.set(key, parentKey);
    index.set(parentKey, (index.get(parentKey) ?? new Set()).add(key));
  }
}
