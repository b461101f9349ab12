// The merge queue's loop (spec.integrate, issue 32 §3), for both modes: after each controller pass it gathers
// each queue's facts (its Succeeded tasks not yet integrated, its journal), asks reconciler/merge-queue.ts for
// the next step and carries it out in the queue's clone. The journal (written before each step: a file
// locally, a ConfigMap on a cluster) is how a kill -9 at any point resumes: the first pass after a start
// cleans the clone (or clones again) and redoes the unfinished step. What differs by mode is behind
// MergeQueuePorts (merge-queue-ports.ts): where the clone and the journal live, the remote's URL and credentials, how gates run.
import type { Logger } from 'pino';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { clip, GATE_OUTPUT_MAX, STATUS_MESSAGE_MAX } from '../api/bounds.ts';
import { CONFLICT_FILES_MAX } from '../api/integrate.ts';
import type { IntegrateStatus } from '../api/integrate.ts';
import type { Clock } from './clock.ts';
import * as mq from '../git/integrate-git.ts';
import type { MergeQueueMetrics } from '../metrics/merge-queue-metrics.ts';
import {
  afterStep,
  beginJournal,
  decideQueue,
  inFlight,
  integratedBy,
  mustBeDurable,
  positionsToWrite,
  queuePositions,
  RESOLUTION_TEMPLATE,
  resolutionVars,
  reviewReason,
} from '../reconciler/merge-queue.ts';
import { recordResolution, resolutionEpisodeNumber } from '../reconciler/merge-queue-episode.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import { batchEntryOf, entryOf, placeOf, placeOrNot, waiting } from './merge-queue-entries.ts';
import type { Place } from './merge-queue-entries.ts';
import { batchOnto, pushLanded } from './merge-queue-fetch.ts';
import type { DriveView, Integrand } from './merge-queue-fetch.ts';
import { mergeStep, pullFact } from './merge-queue-forge.ts';
import type { MergeQueuePorts, QueueEpisodes, QueueTask } from './merge-queue-ports.ts';
import type { QueueAction, QueueEntry, QueueJournal, StepOutcome } from '../reconciler/merge-queue.ts';

export interface MergeQueueOptions<T extends QueueTask> {
  ports: MergeQueuePorts<T>;
  episodes: QueueEpisodes;
  logger: Logger;
  clock: Clock;
  metrics?: MergeQueueMetrics;
  writeStatus(key: string, status: AgentTaskStatus): Promise<void>;
}

/** What one drive knows without asking git: `into`'s commit by branch (its fetch or its own push), what it fetched. */
export class MergeQueueLoop<T extends QueueTask> {
  private readonly opts: MergeQueueOptions<T>;
  private readonly ports: MergeQueuePorts<T>;
  /** Queues whose first pass since start is done: later passes trust the clone. */
  private readonly recovered = new Set<string>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly started = new Map<string, number>();
  /** Each queue's journal as last written: a step the store need not hold (see writeJournal) is kept here only. */
  private readonly journals = new Map<string, QueueJournal | undefined>();
  private waiting = 0;
  private halted = false;
  /** Tasks whose `queued` status is being written by announce(). */
  private readonly announced = new Set<string>();

  constructor(opts: MergeQueueOptions<T>) {
    this.opts = opts;
    this.ports = opts.ports;
  }

  /** Starts a drive of every queue with work and no drive running. */
  scan(tasks: readonly T[]): void {
    if (this.halted) return;
    const byQueue = new Map<string, T[]>();
    for (const t of tasks) {
      const q = this.ports.queueOf(t);
      if (q) byQueue.set(q, [...(byQueue.get(q) ?? []), t]);
    }
    this.waiting = 0;
    for (const [queue, members] of byQueue) {
      const pending = members.filter(waiting);
      // A task awaiting its PR starts no drive and does not hold `episodic run` open (without --watch its PR is
      // opened after the run; the next run merges it).
      const ready = pending.filter((t) => this.ports.pulls?.of(t) !== 'awaiting');
      this.waiting += ready.length + (this.readJournal(queue) ? 1 : 0);
      this.opts.metrics?.waiting.set(this.labels(queue), pending.length);
      if (this.running.has(queue)) this.announce(queue, pending);
      if (this.running.has(queue) || (ready.length === 0 && !this.readJournal(queue))) continue;
      const drive = this.drive(queue, members)
        .catch((err: unknown) => {
          if (!this.halted) this.opts.logger.error({ queue, err }, 'merge queue step failed; retried next pass');
        })
        .finally(() => this.running.delete(queue));
      this.running.set(queue, drive);
    }
  }

  /** Nothing waits in any queue and no drive runs (`episodic run` ends only then). */
  idle(): boolean {
    return this.running.size === 0 && this.waiting === 0;
  }

  async stop(): Promise<void> {
    await Promise.all(this.running.values());
  }

  /** Leadership lost or the controller stops: no further step starts (the journal tells the next leader). */
  halt(): void {
    this.halted = true;
  }

  /**
   * A task that entered the queue while another integrates is told its position once (a drive's `begin` tells
   * the tasks waiting when it starts); `announced` keeps a second pass from writing it again meanwhile.
   */
  private announce(queue: string, pending: readonly T[]): void {
    const fresh = pending.filter((t) => t.status.integrate === undefined && !this.announced.has(t.key));
    if (fresh.length === 0) return;
    const entries = pending.map((t) => entryOf(t));
    const positions = queuePositions(entries, this.readJournal(queue));
    for (const t of fresh) {
      const position = positions.get(t.key);
      if (position === undefined || position === 0) continue;
      this.announced.add(t.key);
      void this.record(t, { queue, result: 'queued', position })
        .catch((err: unknown) => this.opts.logger.warn({ queue, task: t.key, err }, 'merge queue position not written'))
        .finally(() => this.announced.delete(t.key));
    }
  }

  /** A queue's metric labels: its name, and on a cluster its namespace apart. */
  private labels(queue: string): Record<string, string> {
    return this.ports.metricLabels?.(queue) ?? { queue };
  }

  private readJournal(queue: string): QueueJournal | undefined {
    if (this.journals.has(queue)) return this.journals.get(queue);
    return this.ports.journals.read(queue);
  }

  /** `done` and a batch's later rebases stay in memory (see mustBeDurable). */
  private async writeJournal(queue: string, j: QueueJournal | undefined): Promise<void> {
    if (this.halted) throw new Error('the merge queue is halted');
    this.journals.set(queue, j);
    if (!mustBeDurable(j)) return;
    await this.ports.journals.write(queue, j);
  }

  /** Steps through the queue until it has nothing to do. */
  private async drive(queue: string, members: T[]): Promise<void> {
    const byKey = new Map(members.map((t) => [t.key, t]));
    const view: DriveView<T> = { members, into: new Map(), fetched: new Set() };
    while (!this.halted) {
      const journal = this.readJournal(queue);
      const entries: QueueEntry[] = members
        .filter(waiting)
        .map((t) => batchEntryOf(t, this.placeOrNot(t), this.ports.pulls));
      const current = journal && byKey.get(journal.key);
      if (journal && !current) {
        await this.writeJournal(queue, undefined); // its task is gone: nothing of it reached into unjournalled
        continue;
      }
      const recovering = !this.recovered.has(queue);
      const it = current && (await this.integrand(current));
      const landed =
        journal?.stage === 'push' && recovering && it ? await pushLanded(this.ports.cloneDir(queue), journal, it) : {};
      const actions = decideQueue({
        entries,
        journal,
        recovering,
        ...landed,
        maxEpisodes: current?.spec.integrate?.onConflict.episodes ?? 0,
        ...pullFact(current, this.ports.pulls),
      });
      this.recovered.add(queue);
      if (actions.length === 0) return;
      for (const action of actions) {
        if (this.halted) return;
        await this.perform(queue, action, journal, byKey, entries, view);
      }
    }
  }

  private async perform(
    queue: string,
    action: QueueAction,
    journal: QueueJournal | undefined,
    byKey: Map<string, T>,
    entries: QueueEntry[],
    view: DriveView<T>,
  ): Promise<void> {
    const clone = this.ports.cloneDir(queue);
    if (action.type === 'begin') {
      const j = beginJournal(action.key, action.next);
      await this.writeJournal(queue, j);
      const batch = inFlight(j);
      for (const key of batch) this.started.set(key, this.opts.clock.now().getTime());
      const recorded = new Map([...byKey.values()].map((t) => [t.key, t.status.integrate?.result]));
      for (const [key, position] of positionsToWrite(queuePositions(entries, j), batch, recorded)) {
        const t = byKey.get(key);
        if (t) await this.record(t, { queue, result: batch.includes(key) ? 'integrating' : 'queued', position });
      }
      return;
    }
    const j = journal as QueueJournal;
    const task = byKey.get(j.key) as T;
    const it = await this.integrand(task);
    if (action.type === 'clean') {
      if (action.episode !== undefined) await this.opts.episodes.kill(j.key, action.episode);
      await mq.ensureClone(clone, it.url, it.credentials);
      if (action.gate) await this.ports.stopGates?.(queue, task);
      await mq.cleanClone(clone);
      return;
    }
    if (action.type === 'finish') return this.finish(queue, task, j, action.result, clone, byKey);
    const outcome = await this.step(queue, action.type, j, it, clone, view);
    if (outcome.kind === 'pushed') view.into.set(it.into, j.rebased as string);
    // into moved under us, or the forge moved it (its commit may be new): fetch it again
    if (outcome.kind === 'rejected' || outcome.step === 'merge') view.into.delete(it.into);
    const next = afterStep(j, outcome);
    // A rebase that ended its batch is dropped: the task begins again, alone, after the batch's push.
    if (outcome.kind === 'conflict' && next.stage === 'push') await mq.cleanClone(clone);
    await this.writeJournal(queue, next);
    if (next.stage === 'resolve') {
      await this.record(task, {
        queue,
        result: outcome.kind === 'conflict' ? 'conflict' : 'gateFailed',
        position: 0,
        attempts: next.attempts,
        episodes: next.episodes,
        ...(next.conflicts ? { conflicts: next.conflicts.slice(0, CONFLICT_FILES_MAX).map((f) => clip(f, 300)) } : {}),
        ...(next.gate ? { gate: next.gate, output: clip(next.output ?? '', GATE_OUTPUT_MAX) } : {}),
      });
    }
  }

  private async step(
    queue: string,
    type: 'rebase' | 'resolve' | 'gate' | 'push' | 'merge',
    j: QueueJournal,
    it: Integrand<T>,
    clone: string,
    view: DriveView<T>,
  ): Promise<StepOutcome> {
    const m = this.opts.metrics;
    if (type === 'rebase') {
      await mq.ensureClone(clone, it.url, it.credentials);
      const res = await mq.rebaseBranch(
        clone,
        await batchOnto(view, clone, it, j, (t) => this.placeOrNot(t)),
        it.branch,
      );
      m?.rebases.inc({ ...this.labels(queue), outcome: res.ok ? 'clean' : 'conflict' });
      if (!res.ok) return { step: 'rebase', kind: 'conflict', files: res.files, output: res.markers };
      // No queue gates: the rebased commit goes straight to the push.
      const gateless = (it.task.spec.integrate?.gates ?? []).length === 0;
      return { step: 'rebase', kind: 'clean', ...(gateless ? { rebased: await mq.headCommit(clone) } : {}) };
    }
    if (type === 'resolve') return this.resolve(queue, j, it, clone);
    if (type === 'gate') {
      const runs = await this.ports.gates(queue, it.task, it.task.spec.integrate?.gates ?? [], clone);
      const failed = runs.find((r) => r.exitCode !== 0);
      if (failed) return { step: 'gate', kind: 'failed', gate: failed.name, output: failed.output ?? '' };
      return { step: 'gate', kind: 'passed', rebased: await mq.headCommit(clone) };
    }
    if (type === 'merge') return mergeStep(this.ports.pulls, it.task, { clone, journal: j, ...it });
    return { step: 'push', kind: await mq.pushInto(clone, j.rebased as string, it.into, it.credentials) };
  }

  /** One resolution episode of the task, counted and recorded as its episode; then the rebase goes on. */
  private async resolve(queue: string, j: QueueJournal, it: Integrand<T>, clone: string): Promise<StepOutcome> {
    this.opts.metrics?.resolutionEpisodes.inc({ ...this.labels(queue), why: j.why ?? 'conflict' });
    const task = it.task;
    const number = resolutionEpisodeNumber(task.status);
    const release = await this.opts.episodes.slot(); // its record's times are the agent's, not the wait's
    let ran: { startedAt: string; result: EpisodeResult; finishedAt: string };
    try {
      await this.writeJournal(queue, { ...j, episode: number }); // before it starts: a restart kills what is left
      const startedAt = this.opts.clock.now().toISOString();
      const vars = resolutionVars(j, it.branch, it.into);
      const run = { number, cwd: clone, template: RESOLUTION_TEMPLATE, vars, status: task.status, queue };
      const result = await this.opts.episodes.run(task.key, run);
      ran = { startedAt, result, finishedAt: this.opts.clock.now().toISOString() };
    } finally {
      release();
    }
    if (this.halted) throw new Error('the merge queue is halted'); // the next leader kills and redoes it
    const { startedAt, result, finishedAt } = ran;
    const name = task.key.slice(task.key.indexOf('/') + 1);
    const ended = recordResolution(name, task.status, { number, startedAt, finishedAt, result });
    task.status = ended.status;
    await this.opts.writeStatus(task.key, ended.status);
    await this.opts.episodes.record(task.key, ended.record);
    if (j.why === 'gate') {
      await mq.commitAll(clone, `episodic merge queue: ${j.key} resolution for gate ${j.gate ?? ''}`);
      return { step: 'resolve', kind: 'resolved' };
    }
    const res = await mq.continueRebase(clone, j.conflicts ?? []);
    return res.ok
      ? { step: 'resolve', kind: 'resolved' }
      : { step: 'resolve', kind: 'conflict', files: res.files, output: res.markers };
  }

  private async finish(
    queue: string,
    task: T,
    j: QueueJournal,
    result: 'integrated' | 'needsReview',
    clone: string,
    byKey: ReadonlyMap<string, T>,
  ): Promise<void> {
    const base = { queue, attempts: j.attempts, episodes: j.episodes, ...(j.pull ? { pullRequest: j.pull } : {}) };
    if (result === 'integrated') {
      await this.integrated(queue, j, byKey);
    } else {
      const files = (j.conflicts ?? []).slice(0, CONFLICT_FILES_MAX);
      const message = clip(`merge queue ${this.ports.shownName(queue)}: ${reviewReason(j, files)}`, STATUS_MESSAGE_MAX);
      const why = { ...(j.gate ? { gate: j.gate } : {}), ...(j.forge ? { forge: j.forge } : {}) };
      await this.record(
        task,
        { ...base, result, conflicts: files, ...why },
        { phase: 'NeedsReview', reason: 'IntegrationFailed', message },
      );
      await mq.cleanClone(clone); // a rebase stopped at a conflict must not stay for the next task
      this.opts.metrics?.integrations.inc({ ...this.labels(queue), result });
    }
    await this.writeJournal(queue, undefined);
    this.started.delete(j.key);
  }

  /** Each task the push carried (a batch's all), with its own rebased commit; a task gone meanwhile is skipped. */
  private async integrated(queue: string, j: QueueJournal, byKey: ReadonlyMap<string, T>): Promise<void> {
    for (const { key, commit } of integratedBy(j)) {
      const t = byKey.get(key);
      // The journal's own task carries its episodes and the PR the forge merged; the batch's others ride along.
      const counts = key === j.key ? { episodes: j.episodes, ...(j.pull ? { pullRequest: j.pull } : {}) } : {};
      if (t) await this.record(t, { queue, result: 'integrated', attempts: j.attempts, ...counts, commit });
      this.opts.metrics?.integrations.inc({ ...this.labels(queue), result: 'integrated' });
      const began = this.started.get(key);
      if (began !== undefined)
        this.opts.metrics?.seconds.observe(this.labels(queue), (this.opts.clock.now().getTime() - began) / 1000);
      this.started.delete(key);
    }
  }

  private async record(
    task: T,
    integrate: Omit<IntegrateStatus, 'attempts' | 'episodes'> & Partial<IntegrateStatus>,
    over: Partial<AgentTaskStatus> = {},
  ) {
    if (this.halted) throw new Error('the merge queue is halted');
    const prev = task.status.integrate;
    const next: AgentTaskStatus = {
      ...task.status,
      ...over,
      integrate: {
        attempts: prev?.attempts ?? 0,
        episodes: prev?.episodes ?? 0,
        ...integrate,
        queue: this.ports.shownName(integrate.queue),
        at: this.opts.clock.now().toISOString(),
      },
    };
    task.status = next;
    await this.opts.writeStatus(task.key, next);
  }

  private async integrand(task: T): Promise<Integrand<T>> {
    const place = placeOf(task, this.ports.remoteUrl(task));
    const credentials = await this.ports.credentials(task);
    return { task, ...place, ...(credentials ? { credentials } : {}) };
  }

  private placeOrNot(task: T): Place | undefined {
    return placeOrNot(task, (t) => this.ports.remoteUrl(t));
  }
}
