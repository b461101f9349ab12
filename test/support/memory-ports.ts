// In-memory implementations of the three ports: the loop's unit tests drive them by hand, and they are
// the smallest example of what a port must do.
import type { AgentTaskSpec, AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { EpisodeLeash } from '../../controller/api/episode-leash.ts';
import type { EpisodeRecord } from '../../controller/api/episode-record.ts';
import type { EpisodeResultInput } from '../../controller/api/episode-result.ts';
import type { DesiredTask, EpisodeExecutor, StatusSink, TaskSource } from '../../controller/core/ports.ts';
import type { ObservedEpisode, StopReason } from '../../controller/reconciler/reconcile.ts';
import type { LiveSpend } from '../../controller/reconciler/spend-cap.ts';

export function desired(
  name: string,
  spec: Record<string, unknown> = {},
  over: Partial<DesiredTask> = {},
): DesiredTask {
  const parsed: AgentTaskSpec = AgentTaskSpecSchema.parse({
    prompt: 'p',
    agent: { command: ['agent'] },
    backoff: { initialSeconds: 10, factor: 2, maxSeconds: 60 },
    ...spec,
  });
  return {
    key: `default/${name}`,
    namespace: 'default',
    name,
    generation: 1,
    spec: parsed,
    dependsOn: parsed.dependsOn,
    deleting: false,
    ...over,
  };
}

export class MemorySource implements TaskSource {
  readonly tasks = new Map<string, DesiredTask>();
  readonly released: string[] = [];
  private listeners: Array<(key: string) => void> = [];
  set(task: DesiredTask): void {
    this.tasks.set(task.key, task);
    for (const l of this.listeners) l(task.key);
  }
  delete(key: string): void {
    this.tasks.delete(key);
    for (const l of this.listeners) l(key);
  }
  get(key: string) {
    return this.tasks.get(key);
  }
  list() {
    return this.tasks.values();
  }
  subscribe(l: (key: string) => void): void {
    this.listeners.push(l);
  }
  readonly held = new Set<string>();
  async hold(task: DesiredTask): Promise<void> {
    this.held.add(task.key);
  }
  async release(task: DesiredTask): Promise<void> {
    this.released.push(task.key);
  }
}

export interface MemoryCall {
  op: 'start' | 'stop';
  key: string;
  number: number;
  reason?: StopReason;
  /** What a start was given to spend through the gateway (a task with spec.agent.credentials). */
  leash?: EpisodeLeash;
}

export class MemoryExecutor implements EpisodeExecutor {
  readonly running = new Map<string, { number: number; startedAt: string }>();
  readonly finished = new Map<string, ObservedEpisode>();
  readonly calls: MemoryCall[] = [];
  readonly forgotten: string[] = [];
  /** Make the next start of these keys throw (an API error worth retrying). */
  readonly failNextStart = new Set<string>();
  /** What a gateway metered so far on a running episode, by key (liveSpend). */
  readonly metered = new Map<string, { costUSD: number; tokens: number }>();
  private listeners: Array<(key: string) => void> = [];
  private readonly now: () => Date;
  constructor(now: () => Date) {
    this.now = now;
  }
  observe(task: DesiredTask, status: AgentTaskStatus): ObservedEpisode | undefined {
    const done = this.finished.get(task.key);
    if (done && status.currentEpisode?.number === done.number) return done;
    if (done) this.finished.delete(task.key);
    const run = this.running.get(task.key);
    if (run) return { number: run.number, state: 'running', startedAt: run.startedAt };
    if (status.currentEpisode) return { number: status.currentEpisode.number, state: 'gone' };
    return undefined;
  }
  async start(
    task: DesiredTask,
    number: number,
    _status?: AgentTaskStatus,
    _upstream?: unknown,
    leash?: EpisodeLeash,
  ): Promise<Record<string, unknown>> {
    this.calls.push({ op: 'start', key: task.key, number, ...(leash ? { leash } : {}) });
    if (this.failNextStart.delete(task.key)) throw new Error('apiserver unavailable');
    this.running.set(task.key, { number, startedAt: this.now().toISOString() });
    return { handle: `${task.key}#${number}` };
  }
  async stop(task: DesiredTask, number: number, reason: StopReason): Promise<void> {
    this.calls.push({ op: 'stop', key: task.key, number, reason });
    if (this.running.get(task.key)?.number === number) this.finish(task.key, { exitCode: null, signal: 'SIGTERM' });
  }
  async tidy(): Promise<void> {}
  async forget(key: string): Promise<void> {
    this.forgotten.push(key);
  }
  runningCount(): number {
    return this.running.size;
  }
  liveSpend(task: { namespace: string; name: string }): LiveSpend | undefined {
    const key = `${task.namespace}/${task.name}`;
    const run = this.running.get(key);
    const m = this.metered.get(key);
    return run && m ? { task: task.name, episode: run.number, ...m } : undefined;
  }
  keys() {
    return new Set([...this.running.keys(), ...this.finished.keys()]);
  }
  subscribe(l: (key: string) => void): void {
    this.listeners.push(l);
  }
  /** The running episode of key ends with this result. */
  finish(key: string, result: EpisodeResultInput): void {
    const run = this.running.get(key);
    if (!run) throw new Error(`${key} has no running episode`);
    this.running.delete(key);
    this.finished.set(key, {
      number: run.number,
      state: 'finished',
      startedAt: run.startedAt,
      finishedAt: this.now().toISOString(),
      result: episodeResult(result),
    });
    for (const l of this.listeners) l(key);
  }
}

export class MemorySink implements StatusSink {
  readonly statuses = new Map<string, AgentTaskStatus>();
  /** Every write, in order, with what the executor had been asked to do by then. */
  readonly writes: Array<{ key: string; status: AgentTaskStatus; beforeStart: boolean }> = [];
  readonly events: Array<{ key: string; reason: string; message: string; details: Record<string, unknown> }> = [];
  read(task: Pick<DesiredTask, 'key'>) {
    return this.statuses.get(task.key);
  }
  async write(task: DesiredTask, status: AgentTaskStatus, opts: { beforeStart: boolean }): Promise<void> {
    this.statuses.set(task.key, status);
    this.writes.push({ key: task.key, status, beforeStart: opts.beforeStart });
  }
  event(task: DesiredTask, _type: string, reason: string, message: string, details: Record<string, unknown>): void {
    this.events.push({ key: task.key, reason, message, details });
  }
  /** Every record, in order, with the status on record when it came. */
  readonly records: Array<{ key: string; record: EpisodeRecord; status: AgentTaskStatus | undefined }> = [];
  readonly forgotten: string[] = [];
  async recordEpisode(task: DesiredTask, record: EpisodeRecord): Promise<void> {
    this.records.push({ key: task.key, record, status: this.statuses.get(task.key) });
  }
  async forget(task: DesiredTask): Promise<void> {
    this.forgotten.push(task.key);
  }
}
