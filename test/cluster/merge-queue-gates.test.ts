// The merge queue's gates on a cluster (issue 32 §3), against the real API server with the test kubelet and a
// real bare repository: the gates run in a pod of the task (hardened, non-root, no model credentials) on the
// queue's scratch branch, cloned and judged by the real `episodic queue-gates`; a gate that passes → the task
// is integrated; one that fails after the rebase → a resolution episode pod with the gate's output, then the
// gates again in a new pod → integrated, or NeedsReview naming the gate; the metrics by namespace and queue.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, repoRoot, skipCluster } from '../support/cluster.ts';
import type { Cluster } from '../support/cluster.ts';
import {
  FakeKubelet,
  NODE,
  agentTaskManifest,
  clusterWithCrd,
  createNamespace,
  startController,
  testClient,
  waitForPod,
  waitForTask,
} from '../support/kubelet.ts';
import type { LooseObject } from '../support/loose-object.ts';
import { git } from '../support/git.ts';
import { origin } from '../support/merge-queue.ts';
import { waitFor } from '../support/wait.ts';

const AGENT = join(repoRoot, 'test/agents/merge-agent.mjs');
/** A bare remote whose main holds shared.txt ('shared'); each task's branch work/TASK starts there too. */
const gatesOrigin = (tasks: readonly string[]) =>
  origin(mkdtempSync(join(tmpdir(), 'episodic-mq-gates-')), {
    shared: 'shared\n',
    branches: tasks.map((t) => `work/${t}`),
  });
// Passes with a.txt or b.txt alone; both need both.txt, which only a resolution episode writes.
const PAIR = {
  name: 'pair',
  check: [NODE, '-e', "const f=require('fs').existsSync;process.exit(f('a.txt')&&f('b.txt')&&!f('both.txt')?1:0)"],
};

/** Task NAME whose agent creates FILE on work/NAME; its resolution episode writes both.txt when told of a gate. */
function taskSpec(bare: string, name: string, file: string, episodes = 1): Record<string, unknown> {
  const env = { MERGE_AGENT_NEW_FILE: file, MERGE_AGENT_ON_GATE: 'both.txt', KEEP: 'kept' };
  return {
    prompt: 'Add a file.',
    agent: {
      image: 'ghcr.io/example/agent:1',
      command: [NODE, AGENT],
      output: 'text',
      env: [
        ...Object.entries(env).map(([n, value]) => ({ name: n, value })),
        { name: 'ANTHROPIC_API_KEY', value: 'sk-not-for-gates' },
      ],
    },
    completion: { onExitZero: true },
    backoff: { initialSeconds: 0.2, factor: 1, maxSeconds: 0.5 },
    limits: { maxEpisodes: 3, episodeTimeoutSeconds: 600 },
    workspace: { git: { url: bare, ref: `work/${name}` } },
    integrate: { into: 'main', queue: 'q', gates: [PAIR], onConflict: { episodes } },
  };
}

async function apply(ns: string, name: string, spec: Record<string, unknown>): Promise<void> {
  await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, name, spec) });
}

const heads = (bare: string) => git(bare, 'for-each-ref', '--format=%(refname:short)', 'refs/heads').split('\n').sort();
const journals = (ns: string) =>
  kubectl(['get', 'configmaps', '-n', ns, '-l', 'episodic.dev/merge-queue', '-o', 'name']);

async function getStatus(client: KubeClient, ns: string, name: string): Promise<Record<string, any>> {
  const t = await client.get<any>(`/apis/episodic.dev/v1alpha1/namespaces/${ns}/agenttasks/${name}`);
  return t.status ?? {};
}

/** The pod NAME once it is not one of `seen` (a gate pod is replaced by the next run under the same name). */
function newPod(client: KubeClient, ns: string, name: string, seen: LooseObject[] = []): Promise<LooseObject> {
  const old = new Set(seen.map((p) => p.metadata.uid));
  return waitFor(
    `a new pod ${name}`,
    async () => {
      const pod = await waitForPod(client, ns, name, 60_000).catch(() => undefined);
      return pod && !old.has(pod.metadata.uid) ? pod : undefined;
    },
    60_000,
  );
}

describe('cluster controller: the merge queue runs its gates in a pod', {
  skip: skipCluster,
  timeout: SUITE_HANG_GUARD_MS,
}, () => {
  let cluster: Cluster;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  const controllers: ClusterController[] = [];

  before(async () => {
    cluster = await clusterWithCrd();
    client = await testClient(cluster);
    kubelet = new FakeKubelet(client);
  });
  after(async () => {
    for (const c of controllers) await c.stop();
    client?.close();
  });

  async function controller(ns: string): Promise<ClusterController> {
    const c = await startController(cluster, { namespace: ns, gitDir: mkdtempSync(join(tmpdir(), 'episodic-mqg-')) });
    controllers.push(c);
    return c;
  }

  it('a passing gate → integrated; failing after the rebase → a resolution pod, the gates again → integrated', async () => {
    const ns = await createNamespace('ctl-mq-gates');
    const c = await controller(ns);
    const bare = gatesOrigin(['ta', 'tb']);
    await apply(ns, 'ta', taskSpec(bare, 'ta', 'a.txt'));
    await apply(ns, 'tb', taskSpec(bare, 'tb', 'b.txt'));
    assert.equal((await kubelet.runEpisode(await waitForPod(client, ns, 'ta-ep-1'))).exitCode, 0);

    // ta's gate pod: the task's image, hardened, the gates on the scratch branch at the rebased commit.
    const gate = await newPod(client, ns, 'ta-mq-gate');
    assertHardenedGatePod(gate, 'ta');
    assert.deepEqual(heads(bare), ['episodic/merge-queue/q/ta', 'main', 'work/ta', 'work/tb']);
    let output = '';
    assert.equal((await kubelet.runGatePod(gate, { output: (s) => (output += s) })).exitCode, 0, output);
    assert.match(output, /gate pair: check passed\n/);
    await waitForTask(client, ns, 'ta', (s) => s.integrate?.result === 'integrated', 60_000);
    const ta = await getStatus(client, ns, 'ta');
    assert.equal(ta.integrate?.commit, git(bare, 'rev-parse', 'main'));

    // tb rebased onto a main with a.txt: its gate fails in the pod, and says so.
    assert.equal((await kubelet.runEpisode(await waitForPod(client, ns, 'tb-ep-1'))).exitCode, 0);
    const failing = await newPod(client, ns, 'tb-mq-gate');
    assert.equal((await kubelet.runGatePod(failing)).exitCode, 1);
    const resolution = await waitForPod(client, ns, 'tb-ep-2', 60_000);
    const tbFailed = await getStatus(client, ns, 'tb');
    assert.equal(tbFailed.integrate?.result, 'gateFailed');
    assert.equal(tbFailed.integrate?.gate, 'pair');
    output = '';
    const ended = await kubelet.runEpisode(resolution, { output: (s) => (output += s) });
    assert.equal(ended.exitCode, 0, output);
    assert.match(output, /The queue gate "pair" failed after the rebase/);

    // The gates again, in a new pod, on the tree with the resolution's both.txt: they pass.
    const again = await newPod(client, ns, 'tb-mq-gate', [failing]);
    assert.equal((await kubelet.runGatePod(again)).exitCode, 0);
    await waitForTask(client, ns, 'tb', (s) => s.integrate?.result === 'integrated', 60_000);
    assert.deepEqual(git(bare, 'ls-tree', '--name-only', 'main').split('\n').sort(), [
      'a.txt',
      'b.txt',
      'both.txt',
      'shared.txt',
    ]);
    assert.equal(git(bare, 'rev-list', '--merges', 'main'), '', 'linear');
    assert.equal(git(bare, 'rev-list', '--count', 'main'), '4', "seed, a, b, the resolution's commit");
    const tb = await getStatus(client, ns, 'tb');
    assert.equal(tb.integrate?.episodes, 1);
    assert.equal(tb.episodes, 2, 'its own episode and the resolution episode; gate pods are no episodes');
    assert.deepEqual(heads(bare), ['main', 'work/ta', 'work/tb'], 'no scratch branch left');
    assert.equal(await journals(ns), '');

    // The metrics as a scrape has them: by namespace and queue (the spec's name).
    const body = await (await fetch(`${c.servers[0]?.url}/metrics`)).text();
    const labels = `namespace="${ns}",queue="q"`;
    assert.match(
      body,
      new RegExp(`^episodic_merge_queue_integrations_total\\{${labels},result="integrated"\\} 2$`, 'm'),
    );
    assert.match(body, new RegExp(`^episodic_merge_queue_resolution_episodes_total\\{${labels},why="gate"\\} 1$`, 'm'));
    assert.match(body, new RegExp(`^episodic_merge_queue_rebases_total\\{${labels},outcome="clean"\\} 2$`, 'm'));
    assert.match(body, new RegExp(`^episodic_merge_queue_waiting\\{${labels}\\} 0$`, 'm'));
    assert.match(body, new RegExp(`^episodic_merge_queue_integration_seconds_count\\{${labels}\\} 2$`, 'm'));
  });

  it('a controller stopped while its gate pod waits: the next one deletes it, rebases again, runs the gates once more', async () => {
    const ns = await createNamespace('ctl-mq-gates-restart');
    const first = await controller(ns);
    const bare = gatesOrigin(['sa']);
    await apply(ns, 'sa', taskSpec(bare, 'sa', 'a.txt'));
    await kubelet.runEpisode(await waitForPod(client, ns, 'sa-ep-1'));
    const orphan = await newPod(client, ns, 'sa-mq-gate');
    const journal = await kubectl([
      'get',
      'configmap',
      '-n',
      ns,
      'episodic-merge-queue-q',
      '-o',
      'jsonpath={.data.journal}',
    ]);
    assert.equal(JSON.parse(journal).stage, 'gate', 'the journal names the gate step before the pod runs');
    await first.stop();
    controllers.splice(controllers.indexOf(first), 1);

    await controller(ns); // a fresh scratch directory: the clone is gone with the old pod
    const again = await newPod(client, ns, 'sa-mq-gate', [orphan]);
    assert.equal((await kubelet.runGatePod(again)).exitCode, 0);
    await waitForTask(client, ns, 'sa', (s) => s.integrate?.result === 'integrated', 60_000);
    assert.equal(git(bare, 'rev-list', '--count', 'main'), '2', 'seed and sa: pushed once');
    assert.deepEqual(heads(bare), ['main', 'work/sa']);
    assert.equal(await journals(ns), '');
  });

  it('a gate still failing with no resolution episodes left → NeedsReview naming the gate', async () => {
    const ns = await createNamespace('ctl-mq-gates-review');
    await controller(ns);
    const bare = gatesOrigin(['ra', 'rb']);
    await apply(ns, 'ra', taskSpec(bare, 'ra', 'a.txt'));
    await apply(ns, 'rb', taskSpec(bare, 'rb', 'b.txt', 0));
    await kubelet.runEpisode(await waitForPod(client, ns, 'ra-ep-1'));
    assert.equal((await kubelet.runGatePod(await newPod(client, ns, 'ra-mq-gate'))).exitCode, 0);
    await waitForTask(client, ns, 'ra', (s) => s.integrate?.result === 'integrated', 60_000);
    const before = git(bare, 'rev-parse', 'main');
    await kubelet.runEpisode(await waitForPod(client, ns, 'rb-ep-1'));
    assert.equal((await kubelet.runGatePod(await newPod(client, ns, 'rb-mq-gate'))).exitCode, 1);
    const rb = await waitForTask(client, ns, 'rb', (s) => s.phase === 'NeedsReview', 60_000);
    assert.equal(rb.status?.reason, 'IntegrationFailed');
    assert.match(rb.status?.message ?? '', /merge queue q: queue gate pair still fails after 0 resolution episode/);
    assert.equal(git(bare, 'rev-parse', 'main'), before, 'main did not move');
    assert.deepEqual(heads(bare), ['main', 'work/ra', 'work/rb']);
  });
});

/** The gate pod: the task's, labelled for the queue, non-root and unprivileged, no model key, no agent. */
function assertHardenedGatePod(pod: LooseObject, task: string): void {
  assert.equal(pod.metadata.labels?.['episodic.dev/merge-queue-gate'], 'true');
  assert.equal(pod.metadata.labels?.['episodic.dev/task'], task, "the task's NetworkPolicy selects it");
  assert.equal(pod.metadata.labels?.['episodic.dev/episode'], undefined, 'no episode of the task');
  assert.equal(pod.metadata.ownerReferences?.[0]?.name, task);
  assert.equal(pod.spec.automountServiceAccountToken, false);
  assert.equal(pod.spec.securityContext.runAsNonRoot, true);
  const [container] = pod.spec.containers;
  assert.equal(container.image, 'ghcr.io/example/agent:1');
  assert.deepEqual(container.command, ['episodic', 'queue-gates']);
  assert.equal(container.securityContext.runAsNonRoot, true);
  assert.equal(container.securityContext.allowPrivilegeEscalation, false);
  assert.equal(container.securityContext.readOnlyRootFilesystem, true);
  assert.deepEqual(container.securityContext.capabilities, { drop: ['ALL'] });
  const env = Object.fromEntries(container.env.map((e: any) => [e.name, e.value]));
  assert.equal(env.KEEP, 'kept', "the task's env, as its step gates have");
  assert.equal(env.ANTHROPIC_API_KEY, undefined, 'no model key: the gates call no model');
  assert.equal(env.EPISODIC_EPISODE_CONFIG, undefined);
  const config = JSON.parse(env.EPISODIC_QUEUE_GATES_CONFIG);
  assert.equal(config.git.ref, `episodic/merge-queue/q/${task}`);
  assert.match(config.commit, /^[0-9a-f]{40}$/);
  assert.deepEqual(
    config.gates.map((g: any) => g.name),
    ['pair'],
  );
}
