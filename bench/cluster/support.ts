// Helpers for bench/cluster/run.ts: bulk create, pod counting through a watch, cleanup, RSS.
import { readFile } from 'node:fs/promises';
import { Informer } from '../../controller/kube/informer.ts';
import type { LooseObject as KubeObject } from '../../test/support/loose-object.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';

const TASKS = '/apis/episodic.dev/v1alpha1/namespaces';

export function taskBody(ns: string, name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentTask',
    metadata: { name, namespace: ns },
    spec: {
      prompt: 'Implement the next item of TODO.md; print <promise>COMPLETE</promise> when none is left.',
      agent: {
        image: 'ghcr.io/example/agent:1',
        command: ['claude', '-p', '--output-format', 'stream-json', '--verbose'],
      },
      ...extra,
    },
  };
}

/** Create count objects with bounded parallelism (the bench's own client has no QPS limit). */
export async function createAll(
  client: KubeClient,
  ns: string,
  count: number,
  body: (i: number) => Record<string, unknown>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      await client.create(`${TASKS}/${ns}/agenttasks`, body(i));
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
}

/** Counts pods in ns as the API server announces them. */
export async function podCounter(
  client: KubeClient,
  ns: string,
): Promise<{ reach(n: number): Promise<void>; stop(): void }> {
  const pods = new Informer<KubeObject>({ client, resource: 'pods', path: `/api/v1/namespaces/${ns}/pods` });
  pods.start();
  await pods.waitForSync();
  return {
    reach: async (n) => {
      while (pods.size < n) await new Promise((r) => setTimeout(r, 20));
    },
    stop: () => pods.stop(),
  };
}

/** Counts AgentTasks in ns whose status.phase is phase, from a watch (cheap next to re-listing them). */
export async function phaseCounter(
  client: KubeClient,
  ns: string,
  phase: string,
): Promise<{ reach(n: number): Promise<void>; stop(): void }> {
  const tasks = new Informer<KubeObject>({ client, resource: 'agenttasks', path: `${TASKS}/${ns}/agenttasks` });
  let count = 0;
  const has = (t: KubeObject) => (t.status?.phase === phase ? 1 : 0);
  tasks.on({
    add: (t) => (count += has(t)),
    update: (old, t) => (count += has(t) - has(old)),
    delete: (t) => (count -= has(t)),
  });
  tasks.start();
  await tasks.waitForSync();
  return {
    reach: async (n) => {
      while (count < n) await new Promise((r) => setTimeout(r, 50));
    },
    stop: () => tasks.stop(),
  };
}

/** With no controller running: strip finalizers, then delete every task and pod in ns. */
export async function deleteTasksThenPods(client: KubeClient, ns: string): Promise<void> {
  const list = await client.get<any>(`${TASKS}/${ns}/agenttasks`);
  const items: KubeObject[] = list.items;
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const task = items[next++];
      if (task.metadata.finalizers?.length) {
        await client
          .mergePatch(`${TASKS}/${ns}/agenttasks/${task.metadata.name}`, { metadata: { finalizers: null } })
          .catch(() => {});
      }
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  await client.delete(`${TASKS}/${ns}/agenttasks`).catch(() => {});
  await client.delete(`/api/v1/namespaces/${ns}/pods`).catch(() => {});
}

/** VmRSS and VmHWM (peak) of a process, in KiB. */
export async function readRss(pid: number): Promise<{ rssKB: number; peakKB: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssKB: field('VmRSS'), peakKB: field('VmHWM') };
}
