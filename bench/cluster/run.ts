// Cluster-mode benchmark against the real test control plane (npm run bench:cluster [-- --quick]).
//
// 1. Throughput: N AgentTasks exist → time until N episode pods exist, with the controller as a real
//    subprocess, against a baseline that creates the same N pods directly with @kubernetes/client-node
//    at the same client-side QPS. Goal: ratio ≤ 1.2.
// 2. Memory: controller RSS with M AgentTasks cached (suspended, so no pods). Goal: < 400 MB.
// 3. Turnaround: episode pod terminated → the next episode's pod created, p50 and p99 over T tasks × E
//    episodes, against bare clients doing the same watch-and-create (turnaround.ts). Goal: ratio ≤ 1.2.
//
// Figures are printed, never asserted. Flags: --tasks N (1000), --memory-tasks M (10000), --qps Q (50),
// --turnaround-tasks T (100), --episodes E (5), --quick (N=100, M=1000, T=20), --only throughput|memory|turnaround.
import { parseArgs } from 'node:util';
import { CoreV1Api } from '@kubernetes/client-node';
import { buildEpisodePod } from '../../controller/executors/cluster/episode-pod.ts';
import { RateLimiter } from '../../controller/kube/rate-limiter.ts';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import {
  clusterWithCrd,
  createNamespace,
  loadTestKubeConfig,
  startControllerProcess,
  testClient,
} from '../../test/support/kubelet.ts';
import type { ControllerProcess } from '../../test/support/kubelet.ts';
import type { Cluster } from '../../test/support/cluster.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { createAll, deleteTasksThenPods, phaseCounter, podCounter, readRss, taskBody } from './support.ts';
import { bareTurnaround, controllerTurnaround } from './turnaround.ts';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string' },
    'memory-tasks': { type: 'string' },
    qps: { type: 'string', default: '50' },
    'turnaround-tasks': { type: 'string' },
    episodes: { type: 'string', default: '5' },
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
  },
});
const runThroughput = values.only === undefined || values.only === 'throughput';
const runMemory = values.only === undefined || values.only === 'memory';
const runTurnaround = values.only === undefined || values.only === 'turnaround';
const T = Number(values['turnaround-tasks'] ?? (values.quick ? 20 : 100));
const E = Number(values.episodes);
const N = Number(values.tasks ?? (values.quick ? 100 : 1000));
const M = Number(values['memory-tasks'] ?? (values.quick ? 1000 : 10_000));
const QPS = Number(values.qps);

const cluster = await clusterWithCrd();
const client = await testClient(cluster);
console.log(`cluster bench: ${N} tasks for throughput, ${M} for memory, client QPS ${QPS} (burst = QPS)`);

const baselineMs = runThroughput ? await baseline(cluster, client) : 0;
const controllerRun = runThroughput ? await throughput(cluster, client) : undefined;
const memory = runMemory ? await memoryBench(cluster, client) : undefined;
const turnaround = runTurnaround
  ? {
      bare: await bareTurnaround(client, T, E, false),
      bareStatus: await bareTurnaround(client, T, E, true),
      controller: await controllerTurnaround(cluster, client, T, E),
    }
  : undefined;
client.close();

console.log('');
if (controllerRun) {
  const ratio = controllerRun.podsMs / baselineMs;
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  console.log(`baseline:   ${N} pods created directly with client-node at ${QPS} QPS: ${s(baselineMs)}`);
  console.log(
    `controller: ${N} AgentTasks → ${N} episode pods: ${s(controllerRun.podsMs)} after "reconciling", ${s(controllerRun.podsSinceSpawnMs)} after process start`,
  );
  console.log(`controller: all ${N} statuses written (Running): ${s(controllerRun.statusMs)} after "reconciling"`);
  console.log(
    `ratio controller/baseline: ${ratio.toFixed(2)} (goal ≤ 1.2); ${(controllerRun.podsSinceSpawnMs / baselineMs).toFixed(2)} counting process start`,
  );
}
if (memory) {
  console.log(
    `controller RSS with ${M} AgentTasks cached: ${memory.rssMB.toFixed(0)} MB settled, ${memory.peakMB.toFixed(0)} MB peak (goal < 400 MB); ` +
      `all reconciled after ${(memory.settleMs / 1000).toFixed(1)} s`,
  );
}

if (turnaround) {
  const f = (t: { p50: number; p99: number; samples: number }) =>
    `p50 ${t.p50.toFixed(1)} ms, p99 ${t.p99.toFixed(1)} ms (${t.samples} turnarounds)`;
  console.log(`turnaround, bare client (watch → create):                ${f(turnaround.bare)}`);
  console.log(`turnaround, bare client (watch → status patch → create): ${f(turnaround.bareStatus)}`);
  console.log(`turnaround, controller:                                  ${f(turnaround.controller)}`);
  const r = (a: number, b: number) => (a / b).toFixed(2);
  console.log(
    `turnaround ratio controller/bare: p50 ${r(turnaround.controller.p50, turnaround.bare.p50)}, p99 ${r(turnaround.controller.p99, turnaround.bare.p99)} (goal ≤ 1.2); ` +
      `vs bare+status: p50 ${r(turnaround.controller.p50, turnaround.bareStatus.p50)}, p99 ${r(turnaround.controller.p99, turnaround.bareStatus.p99)}`,
  );
}

async function baseline(cluster: Cluster, client: KubeClient): Promise<number> {
  const ns = await createNamespace('bench-base');
  const core = loadTestKubeConfig(cluster.kubeconfigPath).makeApiClient(CoreV1Api);
  const limiter = new RateLimiter({ qps: QPS, burst: QPS });
  const spec = AgentTaskSpecSchema.parse(taskBody(ns, 'x').spec);
  const counter = await podCounter(client, ns);
  const started = Date.now();
  await Promise.all(
    Array.from({ length: N }, async (_, i) => {
      const name = `t${i}`;
      const task = {
        apiVersion: 'episodic.dev/v1alpha1' as const,
        kind: 'AgentTask' as const,
        metadata: { name, namespace: ns, uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}` },
        spec,
      };
      await limiter.take('work');
      await core.createNamespacedPod({ namespace: ns, body: buildEpisodePod({ task, spec, episode: 1 }) as any });
    }),
  );
  await counter.reach(N);
  const ms = Date.now() - started;
  counter.stop();
  await deleteTasksThenPods(client, ns);
  return ms;
}

async function throughput(
  cluster: Cluster,
  client: KubeClient,
): Promise<{ podsMs: number; podsSinceSpawnMs: number; statusMs: number }> {
  const ns = await createNamespace('bench-ctl');
  process.stdout.write(`creating ${N} AgentTasks in ${ns} (no controller running yet)... `);
  await createAll(client, ns, N, (i) => taskBody(ns, `t${i}`));
  console.log('done');
  const counter = await podCounter(client, ns);
  const running = await phaseCounter(client, ns, 'Running');
  const spawned = Date.now();
  const proc = await startControllerProcess(cluster, [
    '--namespace',
    ns,
    '--kube-api-qps',
    String(QPS),
    '--kube-api-burst',
    String(QPS),
    '--max-concurrent',
    String(N * 2),
    '--log-level',
    'info',
  ]);
  try {
    const reconciling = await waitForLog(proc, 'caches synced; reconciling');
    await counter.reach(N);
    const podsAt = Date.now();
    counter.stop();
    // Bookkeeping lags by design (episodes first); report when status caught up.
    await running.reach(N);
    running.stop();
    const statusAt = Date.now();
    return { podsMs: podsAt - reconciling, podsSinceSpawnMs: podsAt - spawned, statusMs: statusAt - reconciling };
  } finally {
    await proc.kill('SIGTERM');
    await deleteTasksThenPods(client, ns);
  }
}

async function memoryBench(
  cluster: Cluster,
  client: KubeClient,
): Promise<{ rssMB: number; peakMB: number; settleMs: number }> {
  const ns = await createNamespace('bench-mem');
  process.stdout.write(`creating ${M} suspended AgentTasks in ${ns}... `);
  await createAll(client, ns, M, (i) => taskBody(ns, `m${i}`, { suspend: true }));
  console.log('done');
  const suspended = await phaseCounter(client, ns, 'Suspended');
  const proc = await startControllerProcess(cluster, ['--namespace', ns, '--kube-api-qps', '0', '--log-level', 'info']);
  try {
    const started = Date.now();
    // Settled: every task reconciled (status written) — the cache holds M tasks with status.
    await suspended.reach(M);
    suspended.stop();
    const settleMs = Date.now() - started;
    await new Promise((r) => setTimeout(r, 2000));
    const rss = await readRss(proc.child.pid!);
    return { rssMB: rss.rssKB / 1024, peakMB: rss.peakKB / 1024, settleMs };
  } finally {
    await proc.kill('SIGTERM');
    await deleteTasksThenPods(client, ns);
  }
}

function waitForLog(proc: ControllerProcess, msg: string): Promise<number> {
  return new Promise((resolve) => {
    const check = () => {
      const hit = proc.logs.find((l) => l.msg === msg);
      if (hit) resolve(Date.parse(hit.time));
      else setTimeout(check, 20);
    };
    check();
  });
}
