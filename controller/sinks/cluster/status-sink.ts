// Status on a cluster: the /status subresource (write-behind, see status-writer.ts) and core/v1 Events,
// plus a log line per event like local mode; episode records as AgentEpisodes (episode-records.ts).
import type { Logger } from 'pino';
import type { AgentTaskStatus } from '../../api/agent-task.ts';
import type { EpisodeRecord } from '../../api/episode-record.ts';
import type { StatusSink } from '../../core/ports.ts';
import { episodePodName } from '../../kube/names.ts';
import type { EventRecorder } from '../../kube/events.ts';
import type { Informer } from '../../kube/informer.ts';
import type { CustomObject } from '../../kube/objects.ts';
import type { ClusterTask } from '../../core/ports.ts';
import { logEvent } from '../event-log.ts';
import type { EpisodeRecordWriter } from './episode-records.ts';
import { parseStatus } from './status-writer.ts';
import type { StatusWriter } from './status-writer.ts';

export class KubeStatusSink implements StatusSink<ClusterTask> {
  private readonly tasks: Informer<CustomObject>;
  private readonly writer: StatusWriter;
  private readonly events: EventRecorder;
  private readonly records: EpisodeRecordWriter;
  private readonly log: Logger;

  constructor(opts: {
    tasks: Informer<CustomObject>;
    writer: StatusWriter;
    events: EventRecorder;
    records: EpisodeRecordWriter;
    log: Logger;
  }) {
    this.tasks = opts.tasks;
    this.writer = opts.writer;
    this.events = opts.events;
    this.records = opts.records;
    this.log = opts.log;
  }

  read(task: { key: string }): AgentTaskStatus | undefined {
    const obj = this.tasks.get(task.key);
    return obj ? this.writer.effective(task.key, parseStatus(obj.status)) : undefined;
  }

  /**
   * Write-behind, so a flood of new tasks gets its pods first. Before a start, a finished episode must be
   * on the server (its cost is never lost); a first start need not be: the pod's name is its episode
   * number, so a restart adopts a pod whose start the status lost.
   */
  async write(task: ClusterTask, status: AgentTaskStatus, opts: { beforeStart: boolean }): Promise<void> {
    const server = parseStatus(this.tasks.get(task.key)?.status);
    // The pod's name follows from the episode: naming it now saves a second write once the pod exists.
    const current = status.currentEpisode;
    if (current && !current.podName)
      status = { ...status, currentEpisode: { ...current, podName: episodePodName(task.name, current.number) } };
    this.writer.set(task.key, status);
    if (opts.beforeStart && (server.lastEpisode?.number ?? 0) !== (status.lastEpisode?.number ?? 0))
      await this.writer.flush(task.key);
  }

  event(
    task: ClusterTask,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    details: Record<string, unknown>,
  ): void {
    this.events.record(task.object, type, reason, message);
    logEvent(this.log, task, type, reason, message, details);
  }

  /** Created before the status reporting the episode's end is written; pruning older ones is not waited for. */
  recordEpisode(task: ClusterTask, record: EpisodeRecord): Promise<void> {
    return this.records.record(task, record);
  }

  /** Before the finalizer goes, so a task's records never outlive it (no garbage collector needed). */
  forget(task: ClusterTask): Promise<void> {
    return this.records.forget(task);
  }
}
