// The local and the cluster implementation of each port, behind one harness, so one contract suite
// (ports.contract.test.ts) runs against both. Real parts only: processes and files locally; a real
// kube-apiserver, informers and a fake kubelet (the only stand-in: no kubelet runs here) on a cluster.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import { EpisodeRecordSchema } from '../../controller/api/episode-record.ts';
import type { EpisodeRecord } from '../../controller/api/episode-record.ts';
import { EPISODE_CRD_FILE, EPISODE_CRD_NAME } from '../../controller/api/crd.ts';
import type { DesiredTask, EpisodeExecutor, StatusSink, TaskSource } from '../../controller/core/ports.ts';
import { episodePodName } from '../../controller/kube/names.ts';
import { PodEpisodeExecutor } from '../../controller/executors/cluster/pod-executor.ts';
import { ProcessEpisodeExecutor } from '../../controller/executors/local/process-executor.ts';
import { EventRecorder } from '../../controller/kube/events.ts';
import { Informer } from '../../controller/kube/informer.ts';
import type { LooseObject as KubeObject } from '../support/loose-object.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { encodeTerminationMessage } from '../../controller/api/termination-message.ts';
import {
  EpisodeRecordWriter,
  episodesPath as clusterEpisodesPath,
} from '../../controller/sinks/cluster/episode-records.ts';
import { KubeStatusSink } from '../../controller/sinks/cluster/status-sink.ts';
import { StatusWriter } from '../../controller/sinks/cluster/status-writer.ts';
import { FileStatusStore } from '../../controller/sinks/local/file-status.ts';
import { FileStatusSink } from '../../controller/sinks/local/file-status-sink.ts';
import { readRecords } from '../../controller/sinks/local/episode-records.ts';
import { episodesPath } from '../../controller/util/state-layout.ts';
import { AgentTaskSource } from '../../controller/sources/cluster/agent-task-source.ts';
import { SpecDirSource } from '../../controller/sources/local/spec-dir-source.ts';
import { loadSpecDir } from '../../controller/sources/local/spec-files.ts';
import { kubectl, repoRoot } from '../support/cluster.ts';
import {
  FakeKubelet,
  clusterWithCrd,
  createNamespace,
  fakeClaudeSpec,
  testClient,
  testLogger,
} from '../support/kubelet.ts';
import { NODE, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

/** How an episode ends, as the harness makes it end. */
export interface Ending {
  exitCode: number;
  costUSD: number;
  promise?: boolean;
}

export interface PortHarness {
  readonly name: string;
  source: TaskSource;
  executor: EpisodeExecutor;
  sink: StatusSink;
  /** Creates or edits a task (spec fields over a default agent). */
  apply(name: string, spec?: Record<string, unknown>): Promise<void>;
  remove(name: string): Promise<void>;
  /** Makes the running episode `number` of the task end as told. */
  finish(task: DesiredTask, number: number, ending: Ending): Promise<void>;
  /** The task's status as a fresh reader finds it in durable storage (a restarted controller). */
  readBack(task: DesiredTask): Promise<AgentTaskStatus | undefined>;
  /**
   * The task's episode records as a fresh reader finds them in durable storage, oldest first; `now`: without
   * first waiting for writes the sink still has under way.
   */
  readRecords(task: DesiredTask, now?: 'now'): Promise<EpisodeRecord[]>;
  /** Reasons of the events recorded for the task. */
  events(task: DesiredTask): Promise<string[]>;
  keyOf(name: string): string;
  close(): Promise<void>;
}

// An agent that runs until told how to end: it waits for finish-N.json in its workspace, then prints a
// Claude Code result line (the real format) with that exit code and cost.
const WAITING_AGENT = `
import { existsSync, readFileSync } from 'node:fs';
const file = 'finish-' + process.env.EPISODIC_EPISODE + '.json';
const wait = () => {
  if (!existsSync(file)) return setTimeout(wait, 20);
  const e = JSON.parse(readFileSync(file, 'utf8'));
  const text = 'did the work' + (e.promise ? ' <promise>COMPLETE</promise>' : '');
  console.log(JSON.stringify({ type: 'result', subtype: 'success', is_error: e.exitCode !== 0, result: text, total_cost_usd: e.costUSD, usage: { input_tokens: 10, output_tokens: 5 } }));
  process.exit(e.exitCode);
};
wait();
`;

export async function localHarness(): Promise<PortHarness> {
  const dir = tempDir('episodic-ports-');
  const stateDir = join(dir, '.episodic');
  const agent = join(dir, 'agent.mjs');
  writeFileSync(agent, WAITING_AGENT);
  const lines: Array<{ task?: string; event?: string }> = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write: (chunk, _enc, done) => {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  );
  const sink = new FileStatusSink(stateDir, logger);
  const source = new SpecDirSource();
  const executor = new ProcessEpisodeExecutor({
    root: dir,
    stateDir,
    stateId: '00000000-0000-4000-8000-000000000000',
    logger,
    killGraceMs: 500,
  });
  const reload = async () => source.set(await loadSpecDir(dir));
  return {
    name: 'local',
    source,
    executor,
    sink,
    async apply(name, spec = {}) {
      const doc = {
        apiVersion: 'episodic.dev/v1alpha1',
        kind: 'AgentTask',
        metadata: { name },
        spec: { prompt: 'work', agent: { command: [NODE, agent], output: 'claude' }, ...spec },
      };
      writeFileSync(join(dir, `${name}.yaml`), JSON.stringify(doc));
      await reload();
    },
    async remove(name) {
      (await import('node:fs')).rmSync(join(dir, `${name}.yaml`));
      await reload();
    },
    async finish(task, number, ending) {
      const ws = join(dir, 'ws', task.name);
      mkdirSync(ws, { recursive: true });
      writeFileSync(join(ws, `finish-${number}.json`), JSON.stringify(ending));
    },
    async readBack(task) {
      const { records } = await new FileStatusStore(stateDir).readAll();
      return records.find((r) => r.name === task.name)?.status;
    },
    async readRecords(task) {
      return readRecords(episodesPath(stateDir, task.namespace, task.name));
    },
    async events(task) {
      return lines.filter((l) => l.task === task.name && l.event).map((l) => l.event as string);
    },
    keyOf: (name) => `default/${name}`,
    async close() {
      for (const key of executor.keys()) {
        const task = source.get(key);
        if (task) await executor.stop(task, sink.read(task)?.currentEpisode?.number ?? 0, 'cancelled');
      }
    },
  };
}

export async function clusterHarness(): Promise<PortHarness> {
  const cluster = await clusterWithCrd();
  await kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, EPISODE_CRD_FILE)]);
  await kubectl(['wait', '--for=condition=Established', '--timeout=60s', `crd/${EPISODE_CRD_NAME}`]);
  const ns = await createNamespace('ports');
  const client: KubeClient = await testClient(cluster);
  const log = testLogger();
  const informer = (path: string, labelSelector?: string) =>
    new Informer<KubeObject>({ client, resource: path, path, labelSelector });
  const tasks = informer(`/apis/episodic.dev/v1alpha1/namespaces/${ns}/agenttasks`);
  const pods = informer(`/api/v1/namespaces/${ns}/pods`, 'episodic.dev/task');
  const source = new AgentTaskSource({ tasks, client, log });
  const executor = new PodEpisodeExecutor({ client, pods, log, podRetention: 3, imagePullGraceMs: 60_000 });
  const writer = new StatusWriter({ client, tasks, log });
  const recorder = new EventRecorder({ client, identity: 'ports-test', log });
  const records = new EpisodeRecordWriter({ client, tasks, log });
  const sink = new KubeStatusSink({ tasks, writer, events: recorder, records, log });
  tasks.start();
  pods.start();
  await Promise.all([tasks.waitForSync(), pods.waitForSync()]);
  const kubelet = new FakeKubelet(client);
  const manifest = (name: string, spec: Record<string, unknown>) =>
    JSON.stringify({
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTask',
      metadata: { name, namespace: ns },
      spec: fakeClaudeSpec(spec),
    });
  return {
    name: 'cluster',
    source,
    executor,
    sink,
    async apply(name, spec = {}) {
      const before = tasks.get(`${ns}/${name}`)?.metadata.generation ?? 0;
      await kubectl(['apply', '-f', '-'], { input: manifest(name, spec) });
      await waitFor(`${name} in the informer`, () => (tasks.get(`${ns}/${name}`)?.metadata.generation ?? 0) > before);
    },
    async remove(name) {
      await kubectl(['delete', 'agenttask', name, '-n', ns, '--wait=false']);
      await waitFor(
        `${name} deleting or gone`,
        () => !tasks.get(`${ns}/${name}`) || !!tasks.get(`${ns}/${name}`)?.metadata.deletionTimestamp,
      );
    },
    async finish(task, number, ending) {
      const podName = episodePodName(task.name, number);
      const pod = await waitFor(`pod ${podName}`, () => pods.get(`${ns}/${podName}`));
      const result = episodeResult({
        exitCode: ending.exitCode,
        costUSD: ending.costUSD,
        completion: ending.promise ? 'promise' : undefined,
        format: 'claude',
      });
      await kubelet.terminate(await kubelet.setRunning(pod), {
        exitCode: ending.exitCode,
        message: encodeTerminationMessage(result),
      });
    },
    async readBack(task) {
      await writer.drain();
      const obj: KubeObject = await client.get(`/apis/episodic.dev/v1alpha1/namespaces/${ns}/agenttasks/${task.name}`);
      return obj.status;
    },
    async readRecords(task, now) {
      if (now !== 'now') await records.drain();
      const list = await client.get<any>(clusterEpisodesPath(ns), { labelSelector: `episodic.dev/task=${task.name}` });
      return (list.items as Array<{ record: unknown }>)
        .map((o) => EpisodeRecordSchema.parse(o.record))
        .sort((a, b) => a.number - b.number);
    },
    async events(task) {
      await recorder.drain();
      const list = await client.get<any>(`/api/v1/namespaces/${ns}/events`, {
        fieldSelector: `involvedObject.name=${task.name}`,
      });
      return (list.items as KubeObject[]).map((e) => (e as any).reason as string);
    },
    keyOf: (name) => `${ns}/${name}`,
    async close() {
      writer.stop();
      records.stop();
      tasks.stop();
      pods.stop();
      client.close();
    },
  };
}
