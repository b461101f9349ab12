// The status sink: writes AgentTask status through the /status subresource with a JSON merge patch, only
// when it changed. Writes are "write-behind": the reconcile records the status it wants and goes on (a
// flood of new tasks gets its pods first); flush() makes a write synchronous where order matters (a
// finished episode must be on record before the next one may start).
import type { Logger } from 'pino';
import type { AgentTaskStatus } from '../../api/agent-task.ts';
import { AgentTaskStatusSchema } from '../../api/agent-task.ts';
import { taskPath } from '../../kube/names.ts';
import { KubeError } from '../../kube/kube-client.ts';
import type { KubeClient } from '../../kube/kube-client.ts';
import type { Lane } from '../../kube/rate-limiter.ts';
import type { Informer } from '../../kube/informer.ts';
import type { CustomObject } from '../../kube/objects.ts';
import { API_RETRY, retryDelayMs } from '../../util/retry-delay.ts';

/** The stored status with defaults; a status someone mangled by hand reads as empty rather than crashing us. */
export function parseStatus(raw: unknown): AgentTaskStatus {
  const parsed = AgentTaskStatusSchema.safeParse(raw ?? {});
  return parsed.success ? parsed.data : AgentTaskStatusSchema.parse({});
}

/** Equal after the schema's defaults and pruning: what the apiserver stores is what zod keeps. */
function sameStatus(a: unknown, b: unknown): boolean {
  return canonical(parseStatus(a)) === canonical(parseStatus(b));
}

/** A merge patch that turns `old` into `next`: every field of next, null for each field next dropped. */
function mergePatchFor(old: unknown, next: unknown): unknown {
  if (!isPlainObject(next)) return next;
  const before = isPlainObject(old) ? old : {};
  const patch: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(next)) {
    if (value !== undefined) patch[key] = mergePatchFor(before[key], value);
  }
  for (const key of Object.keys(before)) if (next[key] === undefined) patch[key] = null;
  return patch;
}

export interface StatusWriterOptions {
  client: KubeClient;
  tasks: Informer<CustomObject>;
  log: Logger;
  retryMs?: number;
  /** Writes in flight at once. Waiting keys hold no request body, so a flood of tasks stays cheap. */
  maxConcurrent?: number;
  onWriteError?(key: string, err: unknown): void;
}

export class StatusWriter {
  private readonly desired = new Map<string, AgentTaskStatus>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly urgent = new Set<string>();
  private active = 0;
  private readonly slotQueue: Array<{ key: string; resolve: () => void }> = [];
  private readonly opts: StatusWriterOptions;
  private stopped = false;

  constructor(opts: StatusWriterOptions) {
    this.opts = opts;
  }

  /** The status the controller last decided for key: a pending write, else what the server has. */
  effective(key: string, server: AgentTaskStatus): AgentTaskStatus {
    return this.desired.get(key) ?? server;
  }

  /** The status waiting to be written for key, if any. */
  pending(key: string): AgentTaskStatus | undefined {
    return this.desired.get(key);
  }

  pendingCount(): number {
    return this.desired.size;
  }

  /** Record the wanted status; it is written in the background (bookkeeping lane). */
  set(key: string, status: AgentTaskStatus): void {
    const task = this.opts.tasks.get(key);
    if (!task) return;
    if (!this.running.has(key) && sameStatus(task.status, status)) {
      this.desired.delete(key);
      return;
    }
    this.desired.set(key, status);
    this.kick(key);
  }

  /** Write key's pending status now and wait until the server has it. */
  async flush(key: string): Promise<void> {
    this.urgent.add(key);
    const waiting = this.slotQueue.findIndex((e) => e.key === key);
    if (waiting > 0) this.slotQueue.unshift(...this.slotQueue.splice(waiting, 1));
    try {
      while (this.desired.has(key) && !this.stopped) {
        this.kick(key);
        await this.running.get(key);
      }
    } finally {
      this.urgent.delete(key);
    }
  }

  /** The task is gone: drop whatever was pending for it. */
  forget(key: string): void {
    this.desired.delete(key);
  }

  /** Resolves once every pending write finished (tests, shutdown). */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }

  stop(): void {
    this.stopped = true;
  }

  private kick(key: string): void {
    if (this.running.has(key) || this.stopped) return;
    this.running.set(key, this.writeLoop(key));
  }

  /**
   * Writes until nothing is pending for key. Every exit removes the loop from `running` in the same
   * synchronous step as its last look at `desired`, so a set() that comes after starts a new loop and
   * a set() that came before is seen by this one.
   */
  private async writeLoop(key: string): Promise<void> {
    await undefined; // kick() registers this loop before it can end
    await this.acquireSlot(key);
    try {
      await this.writeUntilDone(key);
    } finally {
      this.releaseSlot();
    }
  }

  private acquireSlot(key: string): Promise<void> {
    if (this.active < (this.opts.maxConcurrent ?? 64)) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const entry = { key, resolve };
      if (this.urgent.has(key)) this.slotQueue.unshift(entry);
      else this.slotQueue.push(entry);
    });
  }

  /** Hands the slot straight to the next waiting key. */
  private releaseSlot(): void {
    const next = this.slotQueue.shift();
    if (next) next.resolve();
    else this.active--;
  }

  private async writeUntilDone(key: string): Promise<void> {
    let failures = 0;
    for (;;) {
      const status = this.desired.get(key);
      const task = this.opts.tasks.get(key);
      if (this.stopped || !status || !task) {
        if (!task) this.desired.delete(key);
        this.running.delete(key);
        return;
      }
      if (sameStatus(task.status, status)) {
        this.desired.delete(key);
        continue;
      }
      const lane: Lane = this.urgent.has(key) ? 'work' : 'bookkeeping';
      try {
        const path = taskPath(task.metadata.namespace as string, task.metadata.name, 'status');
        const updated = await this.opts.client.mergePatch<CustomObject>(
          path,
          { status: mergePatchFor(task.status, status) },
          lane,
        );
        this.opts.tasks.upsert(updated);
        if (this.desired.get(key) === status) this.desired.delete(key);
        failures = 0;
      } catch (err) {
        this.opts.onWriteError?.(key, err);
        // Gone, or a status the API server will never accept (a bug, not weather): retrying cannot help.
        if (
          err instanceof KubeError &&
          err.status >= 400 &&
          err.status < 500 &&
          err.status !== 409 &&
          err.status !== 429
        ) {
          if (this.desired.get(key) === status) this.desired.delete(key);
          continue;
        }
        const wait = retryDelayMs({ ...API_RETRY, initialMs: this.opts.retryMs ?? API_RETRY.initialMs }, ++failures, 1);
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    isPlainObject(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, v[k]]),
        )
      : v,
  );
}
