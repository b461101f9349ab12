// The Gizmo examples (examples/gizmo) on the real API server: each tasks.yaml applied as it is (the agent's
// path made absolute, an image added: a pod's workspace is a temp directory), every episode run by the real
// runner with the example's stand-in agent (FakeKubelet), so the prompts the controller rendered decide
// what happens. The planner pushes, spawns three owned workers (PARENT in `kubectl get at`), waits and
// publishes the total it read from {{children}}; ping and pong trade balls through their mailbox
// ConfigMaps (wake: onMessage); the sleeper waits (Sleeping) before its next pod.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, repoRoot, skipCluster } from '../support/cluster.ts';
import {
  type FakeKubelet,
  NODE,
  agentTaskManifest,
  getTask,
  listPods,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';
import type { LooseObject } from '../support/loose-object.ts';
import { waitFor } from '../support/wait.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

const WORKERS = ['planner-alpha', 'planner-beta', 'planner-gamma'];

interface ExampleTask {
  metadata: { name: string };
  spec: { workspace: string; agent: { command: string[] } } & Record<string, unknown>;
}

/** An example's tasks, runnable by the fake kubelet: the agent script by its absolute path, no local workspace. */
function exampleTasks(example: string): Array<{ name: string; spec: Record<string, unknown> }> {
  const dir = path.join(repoRoot, 'examples/gizmo', example);
  const docs = parseAllDocuments(readFileSync(path.join(dir, 'tasks.yaml'), 'utf8'));
  return docs.map((d) => {
    const { metadata, spec } = d.toJS() as ExampleTask;
    const { workspace, agent, ...rest } = spec;
    const script = path.resolve(dir, workspace, agent.command[1] as string);
    const cluster = { ...agent, image: 'ghcr.io/example/agent:1', command: [NODE, script] };
    return {
      name: metadata.name,
      spec: { ...rest, agent: cluster, backoff: { initialSeconds: 0.2, maxSeconds: 0.5 } },
    };
  });
}

const promptOf = (pod: LooseObject): string =>
  pod.spec.containers[0]?.env.find((e: { name: string }) => e.name === 'EPISODIC_PROMPT')?.value ?? '';

describe('cluster controller: the gizmo examples', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  withController('ctl-gizmo', {}, (f) => ({ ns, client, kubelet } = f));

  const apply = async (example: string) => {
    for (const t of exampleTasks(example))
      await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, t.name, t.spec) });
  };
  const run = async (pod: string) => {
    const outcome = await kubelet.runEpisode(await waitForPod(client, ns, pod));
    assert.equal(outcome.exitCode, 0, `${pod}: ${outcome.message}`);
  };

  it('planner: plans, spawns three owned workers, waits for them, and reports the total from {{children}}', async () => {
    await apply('planner');
    await run('planner-ep-1');
    const spawn = await waitForPod(client, ns, 'planner-ep-2');
    assert.match(promptOf(spawn), /## Task\n\nSpawn: one worker per text\.\n- alpha: the quick brown fox\n/);
    assert.match(promptOf(spawn), /## Context[^\n]*\n\n1\. Report: sum the workers' counts\./);
    await run('planner-ep-2');

    const waiting = await waitForTask(client, ns, 'planner', (s) => s.reason === 'WaitingForChildren');
    assert.equal(waiting.status?.phase, 'Waiting');
    for (const worker of WORKERS) {
      const child = await getTask(client, ns, worker);
      assert.deepEqual(
        [child?.metadata.ownerReferences?.[0]?.kind, child?.metadata.ownerReferences?.[0]?.name],
        ['AgentTask', 'planner'],
      );
    }
    // kubectl's table tells the workers from the planner (the CRD's Parent printer column).
    const [header, ...rows] = (await kubectl(['get', 'at', '-n', ns])).trim().split('\n');
    const parentAt = header?.indexOf('PARENT') ?? -1;
    assert.ok(parentAt > 0, header);
    assert.deepEqual(
      rows.map((r) => [r.split(/\s+/)[0], r.slice(parentAt).split(/\s+/)[0]]),
      [['planner', ''], ...WORKERS.map((w) => [w, 'planner'])],
    );

    for (const worker of WORKERS) await run(`${worker}-ep-1`);
    const report = await waitForPod(client, ns, 'planner-ep-3');
    assert.match(promptOf(report), /- planner-alpha: Succeeded\n {2}output WORDS: 4\n/);
    await run('planner-ep-3');

    const done = await waitForTask(client, ns, 'planner', (s) => s.phase === 'Succeeded');
    assert.equal(done.status?.reason, 'StackEmpty');
    assert.deepEqual(done.status?.outputs, { TOTAL: '11', WORKERS: '3' });
  });

  it('pingpong: the players trade balls through send (wake: onMessage) until both have said RALLY_OVER', async () => {
    await apply('pingpong');
    // The kubelet runs every episode pod of the two players as it appears, until both tasks have ended.
    const ran = new Map<string, string>();
    const over = async () => {
      const [ping, pong] = [await getTask(client, ns, 'ping'), await getTask(client, ns, 'pong')];
      return ping?.status?.phase === 'Succeeded' && pong?.status?.phase === 'Succeeded';
    };
    await waitFor(
      'ping and pong Succeeded',
      async () => {
        for (const pod of await listPods(client, ns)) {
          if (ran.has(pod.metadata.name)) continue;
          ran.set(pod.metadata.name, promptOf(pod));
          assert.equal((await kubelet.runEpisode(pod)).exitCode, 0, pod.metadata.name);
        }
        return over();
      },
      90_000,
    );
    // Each ball reached its player in {{messages}}: from its partner, in order.
    const balls = (task: string) =>
      [...ran.entries()]
        .filter(([pod]) => pod.startsWith(`${task}-ep-`))
        .sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }))
        .flatMap(([, prompt]) =>
          [...prompt.matchAll(/^from (\S+) at \S+:\n(ball \d+)$/gm)].map((m) => `${m[1]}: ${m[2]}`),
        );
    assert.deepEqual(balls('ping'), ['pong: ball 2', 'pong: ball 4']);
    assert.deepEqual(balls('pong'), ['ping: ball 1', 'ping: ball 3']);
    for (const name of ['ping', 'pong'])
      assert.equal((await getTask(client, ns, name))?.status?.reason, 'PromiseDetected', name);
  });

  it('sleeper: the kettle pod hands back sleep 2; the task sleeps, then the tea pod empties the stack', async () => {
    await apply('sleeper');
    await run('tea-ep-1');
    const sleeping = await waitForTask(client, ns, 'tea', (s) => s.reason === 'Sleeping');
    assert.equal(sleeping.status?.phase, 'Waiting');
    const wakeAt = Date.parse(sleeping.status?.nextEpisodeAt ?? '');
    const tea = await waitForPod(client, ns, 'tea-ep-2');
    // creationTimestamp has whole seconds.
    assert.ok(Date.parse(tea.metadata.creationTimestamp ?? '') >= wakeAt - 1000, 'the next pod waited for the wake');
    assert.match(promptOf(tea), /## Task\n\nPour the tea\.\n/);
    await run('tea-ep-2');
    const done = await waitForTask(client, ns, 'tea', (s) => s.phase === 'Succeeded');
    assert.equal(done.status?.reason, 'StackEmpty');
  });
});
