// The loop's part of spawn and send: gathering a task's SpawnFacts (its children from the source and the
// sink, its mailbox), the placeholders its next episode gets ({{children}}, {{messages}}), acknowledging
// messages once the episode that got them has ended (after that end is on record), passing a child's change
// of phase to its parent, which may be waiting for it, and of spend to every ancestor, whose cap counts it, and
// to the rest of a capped ancestor's family, judged by the same cap (reconciler/family-cap.ts).
import { isTerminal } from '../api/agent-task.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { OWNER_LABELS } from '../api/spawn-fields.ts';
import type { CreatedTasks, TaskOwner } from './created-tasks.ts';
import type { Mailboxes } from './mailboxes.ts';
import type { DesiredTask, StatusSink, TaskSource } from './ports.ts';
import { renderChildren, treeCost } from '../reconciler/children.ts';
import type { ChildView } from '../reconciler/children.ts';
import { finishedOf } from '../reconciler/family-cap.ts';
import type { FamilyCap } from '../reconciler/family-cap.ts';
import { episodesCounted } from '../reconciler/spend-cap.ts';
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
  /** Tasks whose latest pass left an episode running: a sibling's parallel pass sees a start before its write. */
  private readonly running = new Set<string>();

  private readonly created: { store: CreatedTasks; ownerOf: (task: T) => TaskOwner } | undefined;

  constructor(opts: {
    source: TaskSource<T>;
    sink: StatusSink<T>;
    mailboxes: Mailboxes;
    /** Where a forEach step's children are made: the store spawn ops use, and the task as their owner. */
    created?: { store: CreatedTasks; ownerOf: (task: T) => TaskOwner };
  }) {
    this.source = opts.source;
    this.sink = opts.sink;
    this.mailboxes = opts.mailboxes;
    this.created = opts.created;
    opts.source.subscribe((key) => this.index && this.reindex(key));
  }

  /** Creates the tasks a pass planned as this task's children (idempotent by name); what was refused, in words. */
  async createTasks(
    task: T,
    tasks: ReadonlyArray<{ name: string; spec: Record<string, unknown>; labels: Record<string, string> }>,
  ): Promise<string[]> {
    const created = this.created;
    if (!created) return tasks.map((t) => `${t.name}: this controller does not create tasks`);
    const owner = created.ownerOf(task);
    const refused: string[] = [];
    for (const t of tasks) {
      const made = await created.store.create(owner, t.name, t.spec, t.labels);
      if (made.result === 'taken') refused.push(made.message);
    }
    return refused;
  }

  /**
   * A task's children, and its mailbox when the episode that would start from `status` can use it
   * (reconciler/mail.ts readsMailbox): every other task is spared a read per pass.
   */
  async facts(task: T, status: AgentTaskStatus | undefined): Promise<SpawnFacts> {
    const children = this.children(task);
    const caps = this.caps(task);
    if (!readsMailbox(task.spec, status)) return { children, caps, waiting: [], mailboxUnread: true };
    return { children, caps, waiting: await this.mailboxes.read(task.namespace, task.name) };
  }

  /** Right after a task's pass is decided, before any await: whether an episode of it runs now. */
  afterPass(task: T, status: AgentTaskStatus): void {
    if (status.currentEpisode) this.running.add(task.key);
    else this.running.delete(task.key);
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
    // The rest of a capped family is judged again with it: one waiting for it to end, or one it now stops too.
    if (spent || (before.currentEpisode && !after.currentEpisode)) for (const key of this.capped(task)) requeue(key);
  }

  /** The other unfinished members of every capped ancestor's family. */
  private capped(task: T): string[] {
    const keys = new Set<string>();
    for (const head of this.ancestors(task)) {
      if (this.source.get(head)?.spec?.limits.maxCostUSD === undefined) continue;
      for (const key of this.familyOf(head)) {
        const t = this.source.get(key);
        const phase = t && this.sink.read(t)?.phase;
        if (key !== task.key && key !== head && !isTerminal(phase)) keys.add(key);
      }
    }
    return [...keys];
  }

  /** The family caps the task's next episode must fit: each capped ancestor's, and its own over its children. */
  private caps(task: T): FamilyCap[] {
    this.ensureIndex();
    const heads = [...(this.index?.get(task.key)?.size ? [task.key] : []), ...this.ancestors(task)];
    const caps: FamilyCap[] = [];
    for (const key of heads) {
      const head = this.source.get(key);
      const maxCostUSD = head?.spec?.limits.maxCostUSD;
      if (head && maxCostUSD !== undefined) caps.push(this.capOf(head, maxCostUSD, task.key));
    }
    return caps;
  }

  /** What `head`'s family spent and runs now, the task `self` left out (its own status is the pass's). */
  private capOf(head: T, maxCostUSD: number, self: string): FamilyCap {
    const members = this.familyOf(head.key)
      .filter((k) => k !== self)
      .flatMap((k) => {
        const t = this.source.get(k);
        const status = t && this.sink.read(t);
        return t && status ? [{ t, status, running: this.running.has(k) || !!status.currentEpisode }] : [];
      });
    const finished = { costUSD: 0, episodes: 0 };
    for (const m of members) {
      const f = finishedOf(m.status);
      finished.costUSD += f.costUSD;
      finished.episodes += f.episodes;
    }
    const running = members
      .filter((m) => m.running)
      .map((m) => ({ task: m.t.name, status: m.status, declaredUSD: m.t.spec?.limits.expectedEpisodeCostUSD }));
    const othersUSD = members.reduce((sum, m) => sum + m.status.costUSD, 0);
    // A running member's episode is not in its costUSD yet: the gateway counts it as it is metered.
    const countedThrough = Object.fromEntries(members.map((m) => [m.t.name, episodesCounted(m.status)]));
    return { task: head.name, own: head.key === self, maxCostUSD, othersUSD, running, finished, countedThrough };
  }

  /** `root` and every task below it, each once (labels could loop). */
  private familyOf(root: string): string[] {
    this.ensureIndex();
    const seen = new Set<string>([root]);
    const todo = [root];
    for (let key = todo.pop(); key !== undefined; key = todo.pop())
      for (const child of this.index?.get(key) ?? [])
        if (!seen.has(child)) {
          seen.add(child);
          todo.push(child);
        }
    return [...seen];
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
    this.ensureIndex();
    const out: ChildView[] = [];
    for (const key of this.index?.get(task.key) ?? []) {
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
        evidence: status && {
          changedLines: status.changedLines,
          outOfScope: (status.outOfScopeEpisodes ?? 0) > 0,
          gatesPassed: !status.steps?.some((s) => s.gate),
          finishedAt: status.lastEpisode?.finishedAt,
          workspaceChanges: status.workspaceChanges,
        },
      });
    }
    return out;
  }

  private ensureIndex(): void {
    if (this.index) return;
    this.index = new Map();
    for (const t of this.source.list()) this.reindex(t.key);
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
    if (!t) this.running.delete(key);
    if (!t || !parent) return void this.parentOf.delete(key);
    const parentKey = `${t.namespace}/${parent}`;
    this.parentOf.set(key, parentKey);
    index.set(parentKey, (index.get(parentKey) ?? new Set()).add(key));
  }
}
