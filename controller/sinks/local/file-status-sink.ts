// Status locally: one JSON file per task (atomic, see file-status.ts), one log line per event and one
// line of episodes.jsonl per finished episode (episode-records.ts).
import { rm } from 'node:fs/promises';
import type { Logger } from 'pino';
import { isTerminal } from '../../api/agent-task.ts';
import type { AgentTaskStatus } from '../../api/agent-task.ts';
import type { EpisodeRecord } from '../../api/episode-record.ts';
import type { StoreFullError } from '../../core/ports.ts';
import type { SpecFileTask, StatusSink } from '../../core/ports.ts';
import { logEvent } from '../event-log.ts';
import { appendRecord, keepDeletedTaskLogs, recoverRecords } from './episode-records.ts';
import { episodesPath, holdPath, resumeRequestPath } from '../../util/state-layout.ts';
import { FileStatusStore, storeFullError } from './file-status.ts';
import type { StoredStatus } from './file-status.ts';

export class FileStatusSink implements StatusSink<SpecFileTask> {
  readonly store: FileStatusStore;
  private readonly records = new Map<string, StoredStatus>();
  /** Per task, the newest episode number in episodes.jsonl: one the dead controller recorded is not appended again. */
  private readonly recordedUpTo = new Map<string, number>();
  private readonly logger: Logger;
  private readonly stateDir: string;

  constructor(stateDir: string, logger: Logger) {
    this.store = new FileStatusStore(stateDir);
    this.stateDir = stateDir;
    this.logger = logger;
  }

  /** Tasks whose status file cannot be read: they do not run, and the file is never overwritten. */
  readonly unreadable = new Map<string, string>();

  /** What is on disk; unreadable files are reported, never removed. */
  async load(): Promise<StoredStatus[]> {
    const { records, errors, unreadable } = await this.store.readAll();
    for (const e of errors) this.logger.error(e);
    for (const u of unreadable) this.unreadable.set(u.key, u.message);
    for (const r of records) {
      this.records.set(`${r.namespace}/${r.name}`, r);
      try {
        const path = episodesPath(this.stateDir, r.namespace, r.name);
        this.recordedUpTo.set(`${r.namespace}/${r.name}`, recoverRecords(path, r.name, r.status, this.syncError(r)));
      } catch (err) {
        this.logger.error({ namespace: r.namespace, task: r.name, err }, 'could not check the episode records');
      }
    }
    return records;
  }

  read(task: { key: string }): AgentTaskStatus | undefined {
    return this.records.get(task.key)?.status;
  }

  /**
   * Episode facts are fsynced; the rest (Queued, a message) a restart recomputes. Before a start the call
   * returns once the file is renamed into place: only a power loss could undo that, and it stops the agent
   * too. The directory fsync goes on meanwhile.
   */
  async write(task: SpecFileTask, status: AgentTaskStatus, opts: { beforeStart: boolean }): Promise<void> {
    const prev = this.records.get(task.key);
    const next: StoredStatus = {
      namespace: task.namespace,
      name: task.name,
      generation: task.generation,
      specHash: task.specHash,
      status,
    };
    // Most passes change nothing: only a status that differs from the one held is written (the loop checked it).
    if (prev && JSON.stringify(prev) === JSON.stringify(next)) return;
    this.records.set(task.key, next);
    // Known to this run, never written: what is on record there stays until a person looks at it.
    if (this.unreadable.has(task.key)) return;
    const durable = opts.beforeStart || changesEpisodeFacts(prev?.status, status);
    const failed = (err: unknown): never => {
      // Not on record: what is held stays what the file says, so the next pass retries this one instead of
      // building on a status nobody could read back (an episode "started" that never was).
      if (this.records.get(task.key) === next) {
        if (prev) this.records.set(task.key, prev);
        else this.records.delete(task.key);
      }
      throw this.noRoom(err) ?? err;
    };
    if (!opts.beforeStart) {
      await this.store.write(next, { durable }).catch(failed);
      return this.roomAgain();
    }
    let visible!: () => void;
    let onDisk = false;
    const onRecord = new Promise<void>(
      (resolve) =>
        (visible = () => {
          onDisk = true;
          resolve();
        }),
    );
    const written = this.store.write(next, { durable, onVisible: visible });
    written.catch((err: unknown) => {
      if (onDisk)
        this.logger.error(
          { namespace: task.namespace, task: task.name, err },
          'status of a started episode may not survive a power loss',
        );
    });
    await Promise.race([onRecord, written]).catch(failed); // `written` rejects first when the write failed
    this.roomAgain();
  }

  /** Set while the state disk has no room: said once, cleared by the next write that succeeds. */
  full: StoreFullError | undefined;

  private noRoom(err: unknown): StoreFullError | undefined {
    const full = storeFullError(err, this.stateDir);
    if (full && !this.full)
      this.logger.error(`${full.message}; no episode starts until there is room again, and what is recorded is kept`);
    if (full) this.full = full;
    return full;
  }

  private roomAgain(): void {
    if (!this.full) return;
    this.full = undefined;
    this.logger.warn(`the state disk has room again (${this.stateDir}); resuming`);
  }

  async recordEpisode(task: SpecFileTask, record: EpisodeRecord): Promise<void> {
    // A controller killed between appending a record and writing its status left the episode running in
    // status: the next one ends it again, and its record (with the evidence only the first knew) stands.
    if (record.number <= (this.recordedUpTo.get(task.key) ?? 0)) return;
    try {
      appendRecord(episodesPath(this.stateDir, task.namespace, task.name), record, this.syncError(task));
      this.recordedUpTo.set(task.key, record.number);
    } catch (err) {
      // No room: the pass stops as when its status cannot be written (said once); the status still has the
      // episode running, so the next pass with room records it again — nothing is lost.
      const full = this.noRoom(err);
      if (full) throw full;
      this.logger.error(
        { namespace: task.namespace, task: task.name, episode: record.number, err },
        'episode record not written',
      );
    }
  }

  /**
   * The spec is gone and nothing of the task runs: its status (and a pending resume request or suspend hold) goes, as an
   * AgentTask's does on a cluster, so `get` and a task created again under the name start afresh. Its
   * episode logs and records are kept (see deletedTaskDir).
   */
  async forget(task: SpecFileTask): Promise<void> {
    const fields = { namespace: task.namespace, task: task.name };
    try {
      const kept = keepDeletedTaskLogs(this.stateDir, task.namespace, task.name, new Date());
      await rm(resumeRequestPath(this.stateDir, task.namespace, task.name), { force: true });
      await rm(holdPath(this.stateDir, task.namespace, task.name), { force: true });
      await rm(this.store.pathFor(task.namespace, task.name), { force: true });
      this.records.delete(task.key);
      this.recordedUpTo.delete(task.key);
      this.logger.info({ ...fields, ...(kept ? { kept } : {}) }, 'spec deleted: status removed, episode logs kept');
    } catch (err) {
      this.logger.error({ ...fields, err }, 'spec deleted, but its status could not be removed');
    }
  }

  private syncError(task: { namespace: string; name: string }): (err: Error) => void {
    return (err) =>
      this.logger.warn(
        { namespace: task.namespace, task: task.name, err },
        'episode record may not survive a power loss',
      );
  }

  event(
    task: SpecFileTask,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    details: Record<string, unknown>,
  ): void {
    logEvent(this.logger, task, type, reason, message, details);
  }
}

/** Whether `next` records something about episodes that `prev` did not: those writes are fsynced. */
function changesEpisodeFacts(prev: AgentTaskStatus | undefined, next: AgentTaskStatus): boolean {
  return (
    prev?.episodes !== next.episodes ||
    prev.retries !== next.retries ||
    prev.consecutiveFailures !== next.consecutiveFailures ||
    prev.costUSD !== next.costUSD ||
    prev.currentEpisode?.number !== next.currentEpisode?.number ||
    prev.lastEpisode?.number !== next.lastEpisode?.number ||
    (isTerminal(next.phase) && prev.phase !== next.phase)
  );
}
