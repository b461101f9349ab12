// Cluster latency: an `episodic controller` process (the given tree's CLI) for a fresh namespace of the
// shared apiserver, a wake: onMessage task whose pods the bench's FakeKubelet ends at once; each round waits
// until the task awaits a message, lets a random part of a poll period pass, puts a message into the
// mailbox ConfigMap as `episodic send --kubeconfig` does, and measures until the next episode's pod appears
// in the bench's own watch.
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { Informer } from '../../controller/kube/informer.ts';
import type { KubeObject } from '../../controller/kube/objects.ts';
import { KubeMailboxes } from '../../controller/sinks/cluster/mailboxes.ts';
import type { Cluster } from '../../test/support/cluster.ts';
import { FakeKubelet, agentTaskManifest, createNamespace, testClient } from '../../test/support/kubelet.ts';
import { kubectl } from '../../test/support/cluster.ts';
import { NODE } from '../local/lib.ts';
import { POLL_MS, until } from './local.ts';

const CONTINUE = JSON.stringify({ exitCode: 0, message: 'waiting for the next message' });

/** ms from each message being in the mailbox ConfigMap to the next episode's pod being announced. */
export async function measureCluster(cluster: Cluster, cli: string, rounds: number): Promise<number[]> {
  const ns = await createNamespace('bench-mail');
  const client = await testClient(cluster);
  const kubelet = new FakeKubelet(client);
  const seen = new Map<string, number>();
  const pods = new Informer<KubeObject>({ client, resource: 'pods', path: `/api/v1/namespaces/${ns}/pods` });
  pods.on({ add: (pod) => seen.set(pod.metadata.name, Date.now()) });
  pods.start();
  await pods.waitForSync();
  const args = ['controller', '--kubeconfig', cluster.kubeconfigPath, '--namespace', ns, '--kube-api-qps', '0'];
  const child = spawn(NODE, [cli, ...args, '--metrics-addr', '', '--health-addr', ''], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-20_000)));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const spec = {
    prompt: 'Inbox:\n{{messages}}',
    wake: 'onMessage',
    agent: { image: 'ghcr.io/example/agent:1', command: ['agent'], output: 'text' },
    limits: { maxEpisodes: rounds + 2, episodeTimeoutSeconds: 600 },
  };
  await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'inbox', spec) });
  const mailboxes = new KubeMailboxes(client);
  const latencies: number[] = [];
  const log = () => stderr;
  try {
    for (let i = 1; i <= rounds + 1; i++) {
      const name = `inbox-ep-${i}`;
      await until(`pod ${name}`, () => seen.has(name), child, log);
      const pod = pods.get(`${ns}/${name}`) as KubeObject;
      await kubelet.terminate(await kubelet.setRunning(pod), { exitCode: 0, message: CONTINUE });
      if (i > rounds) break;
      await untilAsync(`round ${i}: awaiting a message`, () => awaiting(client, ns, i), child, log);
      await sleep(Math.random() * POLL_MS);
      const at = Date.now();
      const message = { id: `bench.${i}.0`, from: 'bench', at: new Date(at).toISOString(), text: `message ${i}` };
      await mailboxes.send(ns, 'inbox', message);
      await until(`round ${i}: pod inbox-ep-${i + 1}`, () => seen.has(`inbox-ep-${i + 1}`), child, log);
      latencies.push((seen.get(`inbox-ep-${i + 1}`) as number) - at);
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
    pods.stop();
    await kubectl(['delete', 'namespace', ns, '--wait=false']).catch(() => undefined);
    client.close();
  }
  return latencies;
}

async function awaiting(client: Awaited<ReturnType<typeof testClient>>, ns: string, episodes: number) {
  const task = await client.get<{ status?: { reason?: string; episodes?: number; currentEpisode?: unknown } }>(
    `/apis/episodic.dev/v1alpha1/namespaces/${ns}/agenttasks/inbox`,
  );
  const s = task.status;
  return s?.reason === 'AwaitingMessage' && s.episodes === episodes && !s.currentEpisode;
}

async function untilAsync(
  what: string,
  probe: () => Promise<boolean>,
  child: { exitCode: number | null },
  log: () => string,
) {
  const deadline = Date.now() + 30_000;
  while (!(await probe())) {
    if (child.exitCode !== null) throw new Error(`the controller exited (${child.exitCode}) before ${what}: ${log()}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${log().slice(-2000)}`);
    await sleep(20);
  }
}
