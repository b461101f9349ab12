// The Gizmo planner example (examples/gizmo/planner) on the real API server: its tasks.yaml applied as it is
// (the agent's path made absolute, an image added: the pod's workspace is a temp directory), every episode
// run by the real runner with the example's stand-in agent (FakeKubelet). The planner pushes, spawns three
// owned workers, waits for them, and publishes the total it read from {{children}}; `kubectl get at` shows
// each worker's parent in the PARENT column.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, repoRoot, skipCluster } from '../support/cluster.ts';
import type { LooseObject } from '../support/loose-object.ts';
import {
  type FakeKubelet,
  NODE,
  agentTaskManifest,
  getTask,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';

const EXAMPLE = path.join(repoRoot, 'examples/gizmo/planner');
const WORKERS = ['planner-alpha', 'planner-beta', 'planner-gamma'];

/** The example's planner spec, runnable by the fake kubelet. */
function plannerSpec(): Record<string, unknown> {
  const doc = parse(readFileSync(path.join(EXAMPLE, 'tasks.yaml'), 'utf8')) as { spec: Record<string, unknown> };
  const { workspace: _local, agent, ...spec } = doc.spec;
  const script = path.join(EXAMPLE, 'ws/planner', (agent as { command: string[] }).command[1] as string);
  return {
    ...spec,
    agent: { ...(agent as object), image: 'ghcr.io/example/agent:1', command: [NODE, script] },
    backoff: { initialSeconds: 0.2, factor: 1, maxSeconds: 0.5 },
  };
}

const promptOf = (pod: LooseObject): string =>
  pod.spec.containers[0]?.env.find((e: { name: string }) => e.name === 'EPISODIC_PROMPT')?.value ?? '';

describe('cluster controller: the gizmo planner example', { skip: skipCluster, timeout: 120_000 }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  withController('ctl-gizmo', {}, (f) => ({ ns, client, kubelet } = f));

  const run = async (pod: string) => {
    const outcome = await kubelet.runEpisode(await waitForPod(client, ns, pod));
    assert.equal(outcome.exitCode, 0, `${pod}: ${outcome.message}`);
  };

  it('plans, spawns three owned workers, waits for them, and reports the total from {{children}}', async () => {
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'planner', plannerSpec()) });
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
});
