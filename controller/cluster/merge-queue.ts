// Wiring of the merge queue on a cluster (the leader runs it; controller.ts starts it with the loop and
// halts it with leadership). The loop and its rules are the local mode's (core/merge-queue-loop.ts); here
// are a cluster's parts: the journals in ConfigMaps, the clone in the scratch directory, resolution episodes
// as pods (the clone's tree goes to a scratch branch, the pod works on it and pushes, the queue takes the
// result back into its clone and goes on with the rebase), the queue's gates as a pod on that branch, and a
// trigger's task with a PR merged through its forge (the AgentTriggers' informer, sources/cluster/trigger-queue-pulls.ts).
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { Controller } from '../core/controller.ts';
import { MergeQueueLoop } from '../core/merge-queue-loop.ts';
import type { MergeQueuePorts, QueueEpisodes, QueueTask } from '../core/merge-queue-ports.ts';
import type { ClusterTask } from '../core/ports.ts';
import { clusterQueuePorts, KubeQueueJournals, scratchBranch } from '../executors/cluster/merge-queue.ts';
import type { QueueGatePodPort, QueueGatePodRun } from '../executors/cluster/merge-queue.ts';
import { gateRunsOf } from '../executors/cluster/queue-gate-pod.ts';
import type { PodEpisodeExecutor } from '../executors/cluster/pod-executor.ts';
import { dropScratch, pushHead, pushScratch, takeScratch } from '../git/integrate-git.ts';
import type { Informer } from '../kube/informer.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import type { CustomObject } from '../kube/objects.ts';
import type { MergeQueueMetrics } from '../metrics/merge-queue-metrics.ts';
import type { KubeStatusSink } from '../sinks/cluster/status-sink.ts';
import type { StatusWriter } from '../sinks/cluster/status-writer.ts';
import type { AgentTaskSource } from '../sources/cluster/agent-task-source.ts';
import { clusterQueuePulls } from '../sources/cluster/trigger-queue-pulls.ts';

export interface ClusterMergeQueueOptions {
  client: KubeClient;
  namespace?: string;
  /** The controller's scratch directory (the chart's /tmp emptyDir). */
  dir: string;
  loop: Controller<ClusterTask>;
  source: AgentTaskSource;
  sink: KubeStatusSink;
  writer: StatusWriter;
  executor: PodEpisodeExecutor;
  log: Logger;
  clock: Clock;
  metrics?: MergeQueueMetrics;
  /** The AgentTriggers (absent without their CRD): a trigger's task with a PR is merged through its forge. */
  triggers?: Informer<CustomObject>;
}

export interface ClusterMergeQueue {
  halt(): void;
}

/** Loads the journals, then scans the queues after every pass of the loop (or each second). */
export function startClusterMergeQueue(opts: ClusterMergeQueueOptions): ClusterMergeQueue {
  const journals = new KubeQueueJournals(opts.client);
  const halting = new AbortController();
  const gatePods = podGates(opts, halting.signal);
  const pulls = opts.triggers && clusterQueuePulls(opts.triggers, opts.client);
  const ports = clusterQueuePorts({ client: opts.client, journals, dir: opts.dir, gatePods, pulls });
  let halted = false;
  const queue = new MergeQueueLoop<QueueTask>({
    ports,
    episodes: podEpisodes(opts, ports, halting.signal),
    logger: opts.log,
    clock: opts.clock,
    metrics: opts.metrics,
    writeStatus: async (key, status) => {
      const task = opts.source.get(key);
      if (!task) return;
      await opts.sink.write(task, status, { beforeStart: false });
      await opts.writer.flush(key); // once per integration step that changes it: not worth batching
    },
  });
  const tasks = (): QueueTask[] => {
    const out: QueueTask[] = [];
    for (const task of opts.source.list()) {
      const status = opts.sink.read(task);
      if (task.spec?.integrate && status && !task.deleting)
        out.push({ key: task.key, spec: task.spec, status, labels: task.labels });
    }
    return out;
  };
  const tick = (): void => {
    if (halted) return;
    queue.scan(tasks());
    void opts.loop.nextChange().then(tick);
  };
  const load = async (): Promise<void> => {
    for (;;) {
      try {
        return await journals.load(opts.namespace);
      } catch (err) {
        if (halted) return;
        opts.log.warn({ err: String(err) }, 'cannot list the merge queue journals; trying again');
        await opts.loop.nextChange();
      }
    }
  };
  void load().then(tick);
  return {
    halt: () => {
      halted = true;
      queue.halt();
      halting.abort(new Error('the merge queue is halted'));
    },
  };
}

/** Resolution episodes as pods, recorded as the task's other episodes; a halt ends the wait (not the pod). */
function podEpisodes(
  opts: ClusterMergeQueueOptions,
  ports: MergeQueuePorts<QueueTask>,
  signal: AbortSignal,
): QueueEpisodes {
  const task = (key: string): ClusterTask => {
    const t = opts.source.get(key);
    if (!t?.spec) throw new Error(`${key}: no such task for a resolution episode`);
    return t;
  };
  return {
    slot: () => opts.loop.takeSlot(),
    run: async (key, run) => {
      const t = task(key);
      const credentials = await ports.credentials({
        key,
        spec: t.spec as NonNullable<ClusterTask['spec']>,
        status: run.status,
      });
      const branch = scratchBranch(run.queue, t.name);
      await pushScratch(run.cwd, branch, credentials);
      const result = await opts.executor.resolve(t, { ...run, branch, signal });
      // The pod pushed its work to the scratch branch (a failed one may not have): the queue checks the tree.
      try {
        if (result.exitCode === 0) await takeScratch(run.cwd, branch, credentials);
        else await dropScratch(run.cwd, branch, credentials);
      } catch (err) {
        // The clone keeps its markers: the queue's own check sees the conflict again (another episode, or NeedsReview).
        opts.log.warn({ task: key, branch, err: String(err) }, "cannot take the resolution episode's work back");
      }
      return result;
    },
    kill: (key, number) => opts.executor.killResolution(task(key), number),
    record: (key, record) => opts.sink.recordEpisode(task(key), record),
  };
}

/**
 * Queue gates as a pod of the task: the rebased commit goes to the queue's scratch branch, the pod clones it
 * and runs the gates; the branch is deleted after. A halt ends the wait (not the pod: the next leader stops it).
 */
function podGates(opts: ClusterMergeQueueOptions, signal: AbortSignal): QueueGatePodPort {
  const task = (key: string): ClusterTask => {
    const t = opts.source.get(key);
    if (!t?.spec) throw new Error(`${key}: no such task for the queue's gates`);
    return t;
  };
  const drop = (run: QueueGatePodRun) =>
    dropScratch(run.clone, run.branch, run.credentials).catch((err: unknown) =>
      opts.log.warn({ task: run.task.key, err: String(err) }, "cannot delete the queue gates' scratch branch"),
    );
  return {
    run: async (run, gates) => {
      const commit = await pushHead(run.clone, run.branch, run.credentials);
      try {
        const req = { queue: run.queue, branch: run.branch, commit, gates, status: run.task.status, signal };
        return gateRunsOf(await opts.executor.queueGates(task(run.task.key), req), gates);
      } finally {
        await drop(run);
      }
    },
    stop: async (run) => {
      await opts.executor.stopQueueGates(task(run.task.key));
      await drop(run);
    },
  };
}
