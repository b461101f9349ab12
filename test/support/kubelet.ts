// Test helpers for the cluster tests. The test control plane has no scheduler and no kubelet, so
// FakeKubelet plays the kubelet's part the way a kubelet does it: by writing pod status through the
// /status subresource. Episodes "run" by executing the REAL runner (`episodic episode -- <agent>`)
// locally with the pod's own environment, and its result file becomes the termination message, so the
// runner → termination message → controller contract is exercised end to end.
//
// Also here: the small harness every cluster test file shares (CRD install, namespaces, an in-process
// controller, polling).
import { execFile, spawn } from 'node:child_process';
import { after, before } from 'node:test';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { Logger } from 'pino';
import { ClusterController } from '../../controller/cluster/controller.ts';
import type { ClusterControllerOptions } from '../../controller/cluster/controller-options.ts';
import { AGENT_CONTAINER } from '../../controller/executors/cluster/episode-pod.ts';
import type { LooseObject as KubeObject } from './loose-object.ts';
import { KubeClient, isStatus } from '../../controller/kube/kube-client.ts';
import { EPISODE_CONFIG_ENV } from '../../controller/api/episode-config.ts';
import { QUEUE_GATES_CONFIG_ENV } from '../../controller/api/queue-gates-config.ts';
import { ensureCluster, kubectl, repoRoot } from './cluster.ts';
import type { Cluster } from './cluster.ts';
import { cliEntry } from './cli-entry.ts';
import { CLI_HANG_GUARD_MS, hangGuardMessage } from './hang-guard.ts';
import { waitFor } from './wait.ts';

export const NODE = process.execPath;
export const FAKE_CLAUDE = path.join(repoRoot, 'test', 'agents', 'fake-claude.mjs');
export const CRD_PATH = path.join(repoRoot, 'crds', 'episodic.dev_agenttasks.yaml');

// ---------------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------------

export interface ControllerFixture {
  cluster: Cluster;
  ns: string;
  client: KubeClient;
  kubelet: FakeKubelet;
  controller: ClusterController;
}

/**
 * Registers before/after hooks in the calling describe(): a fresh namespace, a client, a fake kubelet and
 * an in-process controller watching that namespace. `bind` hands the pieces to the test file's variables.
 */
export function withController(
  nsPrefix: string,
  opts: Partial<ClusterControllerOptions>,
  bind: (f: ControllerFixture) => void,
): void {
  let fixture: ControllerFixture | undefined;
  before(
    async () => {
      const cluster = await clusterWithCrd();
      const ns = await createNamespace(nsPrefix);
      const client = await testClient(cluster);
      const kubelet = new FakeKubelet(client);
      const controller = await startController(cluster, { namespace: ns, ...opts });
      fixture = { cluster, ns, client, kubelet, controller };
      bind(fixture);
    },
    { timeout: 90 * 60_000 },
  );
  after(async () => {
    await fixture?.controller.stop();
    fixture?.client.close();
  });
}

/** The shared control plane with every CRD in crds/ installed (as `kubectl apply -f crds/` does) and established. */
export async function clusterWithCrd(): Promise<Cluster> {
  const cluster = await ensureCluster();
  await kubectl(['apply', '--server-side', '--force-conflicts', '-f', path.dirname(CRD_PATH)]);
  const kinds = ['agenttasks', 'agentepisodes', 'agentbudgets', 'agenttriggers'];
  await kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...kinds.map((k) => `crd/${k}.episodic.dev`)]);
  return cluster;
}

/** Namespaces are never reused: without kube-controller-manager a deleted one stays Terminating. */
export async function createNamespace(prefix: string): Promise<string> {
  const ns = `${prefix}-${Date.now().toString(36)}-${randomBytes(2).toString('hex')}`;
  await kubectl(['create', 'namespace', ns]);
  return ns;
}

export function loadTestKubeConfig(kubeconfigPath: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return kc;
}

export async function testClient(cluster: Cluster): Promise<KubeClient> {
  return KubeClient.create(loadTestKubeConfig(cluster.kubeconfigPath), { qps: 0 });
}

/** pino to stderr only when EPISODIC_TEST_LOG is set (e.g. EPISODIC_TEST_LOG=debug). */
export function testLogger(): Logger {
  return pino({ level: process.env.EPISODIC_TEST_LOG ?? 'silent' }, pino.destination(2));
}

/** An in-process controller with fast settings for tests. */
export async function startController(
  cluster: Cluster,
  opts: Partial<ClusterControllerOptions> = {},
): Promise<ClusterController> {
  const controller = await ClusterController.start({
    kubeConfig: loadTestKubeConfig(cluster.kubeconfigPath),
    log: testLogger(),
    qps: 0,
    metricsAddr: '127.0.0.1:0',
    imagePullGraceMs: 2_000,
    ...opts,
  });
  await controller.waitForSync();
  return controller;
}

export function agentTaskManifest(ns: string, name: string, spec: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentTask',
    metadata: { name, namespace: ns },
    spec,
  });
}

/** A spec whose agent is the stand-in claude, with backoffs short enough for tests. */
export function fakeClaudeSpec(
  extra: Record<string, unknown> = {},
  agent: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    prompt: 'Work on {{task}}, episode {{episode}} of {{maxEpisodes}}.',
    agent: { image: 'ghcr.io/example/agent:1', command: [NODE, FAKE_CLAUDE, '-p'], output: 'claude', ...agent },
    backoff: { initialSeconds: 0.2, factor: 1, maxSeconds: 0.5 },
    limits: { maxEpisodes: 5, episodeTimeoutSeconds: 600 },
    ...extra,
  };
}

export async function getTask(client: KubeClient, ns: string, name: string): Promise<KubeObject | undefined> {
  try {
    return await client.get(`/apis/episodic.dev/v1alpha1/namespaces/${ns}/agenttasks/${name}`);
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
}

export async function listPods(client: KubeClient, ns: string, task?: string): Promise<KubeObject[]> {
  const list = await client.get<any>(`/api/v1/namespaces/${ns}/pods`, {
    labelSelector: task ? `episodic.dev/task=${task}` : 'episodic.dev/task',
  });
  return list.items;
}

/** Wait until the task's status satisfies pred; returns the task. */
export function waitForTask(
  client: KubeClient,
  ns: string,
  name: string,
  pred: (status: any) => boolean,
  timeoutMs = 20_000,
): Promise<KubeObject> {
  return waitFor(
    `AgentTask ${ns}/${name} status`,
    async () => {
      const task = await getTask(client, ns, name);
      return task && pred(task.status ?? {}) ? task : undefined;
    },
    timeoutMs,
  );
}

export function waitForPod(client: KubeClient, ns: string, name: string, timeoutMs = 20_000): Promise<KubeObject> {
  return waitFor(
    `pod ${ns}/${name}`,
    async () => {
      try {
        return await client.get(`/api/v1/namespaces/${ns}/pods/${name}`);
      } catch (err) {
        if (isStatus(err, 404)) return undefined;
        throw err;
      }
    },
    timeoutMs,
  );
}

/** `episodic controller` as a real subprocess (for kill -9 and leader election). */
export interface ControllerProcess {
  child: ChildProcess;
  /** From the startup log line. */
  identity: string;
  /** Every JSON log line so far. */
  logs: Array<Record<string, any>>;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): Promise<number | string>;
}

export async function startControllerProcess(
  cluster: Cluster,
  args: string[],
  /** Extra environment (e.g. TMPDIR: where its scratch directory is). */
  env: Record<string, string> = {},
): Promise<ControllerProcess> {
  const child = spawn(
    NODE,
    [
      cliEntry(),
      'controller',
      '--kubeconfig',
      cluster.kubeconfigPath,
      '--metrics-addr',
      '',
      '--health-addr',
      '',
      '--kube-api-qps',
      '0',
      ...args,
    ],
    {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const logs: Array<Record<string, any>> = [];
  let buffer = '';
  let onLine: (entry: Record<string, any>) => void = () => {};
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      try {
        const entry = JSON.parse(line);
        logs.push(entry);
        onLine(entry);
      } catch {
        logs.push({ msg: line });
      }
      if (process.env.EPISODIC_TEST_LOG) process.stderr.write(`[controller ${child.pid}] ${line}\n`);
    }
  });
  const exited = new Promise<number | string>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  const identity = await new Promise<string>((resolve, reject) => {
    onLine = (entry) => entry.msg === 'episodic controller started' && resolve(entry.identity);
    void exited.then((code) =>
      reject(new Error(`controller exited (${code}) before starting: ${JSON.stringify(logs.slice(-5))}`)),
    );
    setTimeout(
      () =>
        reject(
          new Error('controller did not log "episodic controller started" within 30 s (is --log-level above info?)'),
        ),
      30_000,
    ).unref();
  }).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw err;
  });
  return {
    child,
    identity,
    logs,
    exited,
    kill: (signal: NodeJS.Signals = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// FakeKubelet
// ---------------------------------------------------------------------------------------------------

export interface RunOptions {
  /** Extra environment for the agent (e.g. FAKE_AGENT_MODE), on top of the pod's own env. */
  env?: Record<string, string>;
  /** Files already in the workspace when the episode starts, as a volume or a clone would carry them. */
  files?: Record<string, string>;
  /** The container's output (the runner's stdout and stderr) as it comes: what the kubelet keeps as its log. */
  output?: (chunk: string) => void;
}

export interface RunOutcome {
  exitCode: number;
  message: string;
}

export class FakeKubelet {
  readonly client: KubeClient;

  constructor(client: KubeClient) {
    this.client = client;
  }

  /** Scheduled and running, as a kubelet reports it once the container started. */
  async setRunning(pod: KubeObject): Promise<KubeObject> {
    const now = stamp();
    return this.patchStatus(pod, {
      phase: 'Running',
      startTime: now,
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
        { type: 'Ready', status: 'True', lastTransitionTime: now },
      ],
      containerStatuses: [containerStatus(pod, { running: { startedAt: now } }, true)],
    });
  }

  /** The container ended: exit code and termination message, pod phase from the exit code. */
  async terminate(
    pod: KubeObject,
    opts: { exitCode: number; message?: string; reason?: string; podReason?: string; podMessage?: string },
  ): Promise<KubeObject> {
    const now = stamp();
    const reason = opts.reason ?? (opts.exitCode === 0 ? 'Completed' : 'Error');
    return this.patchStatus(pod, {
      phase: opts.exitCode === 0 ? 'Succeeded' : 'Failed',
      ...(opts.podReason ? { reason: opts.podReason, message: opts.podMessage ?? '' } : {}),
      containerStatuses: [
        containerStatus(
          pod,
          {
            terminated: {
              exitCode: opts.exitCode,
              reason,
              message: opts.message,
              startedAt: pod.status?.startTime ?? now,
              finishedAt: now,
            },
          },
          false,
        ),
      ],
    });
  }

  /** Run the real runner for this pod (its env, a temp workspace), then report its result as the kubelet would. */
  async runEpisode(pod: KubeObject, opts: RunOptions = {}): Promise<RunOutcome> {
    const running = await this.setRunning(pod);
    const outcome = await runRunner(pod, opts);
    await this.terminate(running, { exitCode: outcome.exitCode, message: outcome.message });
    return outcome;
  }

  /** A merge queue's gate pod: the real `episodic queue-gates` with the pod's env, reported as the kubelet would. */
  async runGatePod(pod: KubeObject, opts: Pick<RunOptions, 'output'> = {}): Promise<RunOutcome> {
    const running = await this.setRunning(pod);
    const outcome = await runQueueGatesRunner(pod, opts);
    await this.terminate(running, { exitCode: outcome.exitCode, message: outcome.message });
    return outcome;
  }

  /** The kubelet killed the pod at activeDeadlineSeconds. */
  deadlineExceeded(pod: KubeObject): Promise<KubeObject> {
    return this.terminate(pod, {
      exitCode: 137,
      reason: 'Error',
      podReason: 'DeadlineExceeded',
      podMessage: 'Pod was active on the node longer than the specified deadline',
    });
  }

  oomKilled(pod: KubeObject): Promise<KubeObject> {
    return this.terminate(pod, { exitCode: 137, reason: 'OOMKilled' });
  }

  evicted(pod: KubeObject): Promise<KubeObject> {
    return this.patchStatus(pod, {
      phase: 'Failed',
      reason: 'Evicted',
      message: 'The node was low on resource: memory.',
      conditions: [
        { type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', lastTransitionTime: stamp() },
      ],
    });
  }

  /** The image cannot be pulled: the container keeps waiting with the kubelet's message. */
  imagePullBackOff(pod: KubeObject): Promise<KubeObject> {
    return this.patchStatus(pod, {
      phase: 'Pending',
      containerStatuses: [
        containerStatus(
          pod,
          {
            waiting: {
              reason: 'ImagePullBackOff',
              message: `Back-off pulling image "${pod.spec.containers[0].image}"`,
            },
          },
          false,
        ),
      ],
    });
  }

  /** What kube-scheduler writes when no node fits. */
  unschedulable(pod: KubeObject): Promise<KubeObject> {
    return this.patchStatus(pod, {
      phase: 'Pending',
      conditions: [
        {
          type: 'PodScheduled',
          status: 'False',
          reason: 'Unschedulable',
          message: '0/3 nodes are available: 3 Insufficient memory.',
          lastTransitionTime: stamp(),
        },
      ],
    });
  }

  async patchStatus(pod: KubeObject, status: Record<string, unknown>): Promise<KubeObject> {
    return this.client.mergePatch(`/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}/status`, {
      status,
    });
  }
}

function containerStatus(pod: KubeObject, state: Record<string, unknown>, ready: boolean): Record<string, unknown> {
  const image = pod.spec.containers[0].image;
  return {
    name: AGENT_CONTAINER,
    image,
    imageID: `${image}@sha256:${'0'.repeat(64)}`,
    ready,
    restartCount: 0,
    started: ready,
    state,
  };
}

function stamp(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

/**
 * `episodic episode --result-file F -- <agent argv>` (bin/episodic.js on dist/, as in the image) with the pod's literal env.
 * The workspace (/workspace in the pod) becomes a temp directory.
 */
export async function runRunner(pod: KubeObject, opts: RunOptions = {}): Promise<RunOutcome> {
  const container = pod.spec.containers.find((c: any) => c.name === AGENT_CONTAINER);
  const command: string[] = container.command;
  const dash = command.indexOf('--');
  const agentArgv = command.slice(dash + 1);
  const workspace = await mkdtemp(path.join(tmpdir(), 'episodic-ws-'));
  for (const [name, text] of Object.entries(opts.files ?? {})) await writeFile(path.join(workspace, name), text);
  const resultFile = path.join(workspace, '..', `${path.basename(workspace)}.result`);
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, LANG: 'C.UTF-8' };
  for (const e of container.env ?? []) {
    if (typeof e.value === 'string' && e.name !== 'HOME') env[e.name] = e.value;
  }
  const config = JSON.parse(env[EPISODE_CONFIG_ENV] as string);
  env[EPISODE_CONFIG_ENV] = JSON.stringify({ ...config, workspaceDir: workspace });
  Object.assign(env, opts.env);
  try {
    const exitCode = await new Promise<number>((resolve, reject) => {
      const child = execFile(
        NODE,
        [cliEntry(), 'episode', '--result-file', resultFile, '--', ...agentArgv],
        { cwd: workspace, env, timeout: CLI_HANG_GUARD_MS },
        (err) => {
          // A pod's episode is bounded by its own timeout: only a hang reaches the guard.
          if ((err as any)?.killed) reject(new Error(hangGuardMessage('episodic episode (a pod)', CLI_HANG_GUARD_MS)));
          else if (err && typeof (err as any).code !== 'number') reject(err);
        },
      );
      if (opts.output) {
        child.stdout?.setEncoding('utf8').on('data', opts.output);
        child.stderr?.setEncoding('utf8').on('data', opts.output);
      }
      // With output wanted, all of it: 'close' waits for the pipes, 'exit' may come before their last bytes.
      child.on(opts.output ? 'close' : 'exit', (code) => resolve(code ?? 1));
    });
    const message = await readFile(resultFile, 'utf8').catch(() => '');
    return { exitCode, message };
  } finally {
    await rm(workspace, { recursive: true, force: true });
    await rm(resultFile, { force: true });
  }
}

/** `episodic queue-gates --result-file F` (a gate pod's command) with the pod's literal env; /workspace a temp directory. */
export async function runQueueGatesRunner(pod: KubeObject, opts: Pick<RunOptions, 'output'> = {}): Promise<RunOutcome> {
  const container = pod.spec.containers.find((c: any) => c.name === AGENT_CONTAINER);
  const workspace = await mkdtemp(path.join(tmpdir(), 'episodic-gate-ws-'));
  const resultFile = `${workspace}.result`;
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, LANG: 'C.UTF-8' };
  for (const e of container.env ?? []) if (typeof e.value === 'string' && e.name !== 'HOME') env[e.name] = e.value;
  const config = JSON.parse(env[QUEUE_GATES_CONFIG_ENV] as string);
  env[QUEUE_GATES_CONFIG_ENV] = JSON.stringify({ ...config, workspaceDir: workspace });
  try {
    const exitCode = await new Promise<number>((resolve, reject) => {
      const args = [cliEntry(), ...container.command.slice(1), '--result-file', resultFile];
      const child = execFile(NODE, args, { cwd: workspace, env, timeout: CLI_HANG_GUARD_MS }, (err) => {
        if ((err as any)?.killed)
          reject(new Error(hangGuardMessage('episodic queue-gates (a pod)', CLI_HANG_GUARD_MS)));
        else if (err && typeof (err as any).code !== 'number') reject(err);
      });
      child.stdout?.setEncoding('utf8').on('data', (c: string) => opts.output?.(c));
      child.stderr?.setEncoding('utf8').on('data', (c: string) => opts.output?.(c));
      child.on('close', (code) => resolve(code ?? 1));
    });
    return { exitCode, message: await readFile(resultFile, 'utf8').catch(() => '') };
  } finally {
    await rm(workspace, { recursive: true, force: true });
    await rm(resultFile, { force: true });
  }
}
