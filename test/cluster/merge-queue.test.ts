// The merge queue on a cluster (issue 32 §3, §4), against the real API server with the test kubelet and a real
// bare repository: three tasks on branches of one remote integrate one at a time, oldest first, into a linear
// main; a conflict becomes a resolution episode pod of the task (on a scratch branch, recorded as its episode 2);
// each task's status is written once per integration step (counted from a watch); and a controller stopped
// while a resolution pod waits resumes from the journal ConfigMap in a fresh clone, integrating nothing twice.
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
import { waitFor } from '../support/wait.ts';
import { git } from '../support/git.ts';
import { origin } from '../support/merge-queue.ts';

const AGENT = join(repoRoot, 'test/agents/merge-agent.mjs');

/** A bare remote whose main holds shared.txt (60 numbered lines); each task's branch work/TASK starts there too. */
const clusterOrigin = (tasks: readonly string[]) =>
  origin(mkdtempSync(join(tmpdir(), 'episodic-mq-cluster-')), { branches: tasks.map((t) => `work/${t}`) });

/** Task NAME, whose agent replaces line `line` of shared.txt with `text` on branch work/NAME. */
function taskSpec(bare: string, name: string, line: number, text: string): Record<string, unknown> {
  const env = { MERGE_AGENT_FILE: 'shared.txt', MERGE_AGENT_LINE: String(line), MERGE_AGENT_TEXT: text };
  return {
    prompt: 'Edit shared.txt.',
    agent: {
      image: 'ghcr.io/example/agent:1',
      command: [NODE, AGENT],
      output: 'text',
      env: Object.entries(env).map(([name, value]) => ({ name, value })),
    },
    completion: { onExitZero: true },
    backoff: { initialSeconds: 0.2, factor: 1, maxSeconds: 0.5 },
    limits: { maxEpisodes: 3, episodeTimeoutSeconds: 600 },
    workspace: { git: { url: bare, ref: `work/${name}` } },
    integrate: { into: 'main', queue: 'q' },
  };
}

async function apply(ns: string, name: string, spec: Record<string, unknown>): Promise<void> {
  await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, name, spec) });
}

function assertLinear(bare: string, commits: number): void {
  assert.equal(git(bare, 'rev-list', '--merges', 'main'), '', 'no merge commits on main');
  assert.equal(git(bare, 'rev-list', '--count', 'main'), String(commits));
}

const heads = (bare: string) => git(bare, 'for-each-ref', '--format=%(refname:short)', 'refs/heads').split('\n').sort();

async function journals(ns: string): Promise<string> {
  return kubectl(['get', 'configmaps', '-n', ns, '-l', 'episodic.dev/merge-queue', '-o', 'name']);
}

async function records(client: KubeClient, ns: string, task: string): Promise<Array<Record<string, any>>> {
  const list = await client.get<any>(`/apis/episodic.dev/v1alpha1/namespaces/${ns}/agentepisodes`, {
    labelSelector: `episodic.dev/task=${task}`,
  });
  return list.items.map((i: any) => i.record).sort((a: any, b: any) => a.number - b.number);
}

/** Every status.integrate each task was written with, in order, from a watch (a rewrite shows as a repeat). */
async function watchIntegrate(client: KubeClient, ns: string) {
  const seen = new Map<string, Array<Record<string, unknown>>>();
  const handle = await client.watch<LooseObject>(
    `/apis/episodic.dev/v1alpha1/namespaces/${ns}/agenttasks`,
    {},
    (event) => {
      const task = event.object as LooseObject | undefined;
      const integrate = task?.status?.integrate;
      if (!task || !integrate || event.type === 'BOOKMARK') return;
      const list = seen.get(task.metadata.name) ?? [];
      const last = list[list.length - 1];
      if (!last || JSON.stringify(last) !== JSON.stringify(integrate)) list.push(integrate);
      seen.set(task.metadata.name, list);
    },
  );
  handle.done.catch(() => undefined);
  return { seen, stop: () => handle.abort() };
}

describe('cluster controller: the merge queue', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
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
    const c = await startController(cluster, { namespace: ns, gitDir: mkdtempSync(join(tmpdir(), 'episodic-mq-')) });
    controllers.push(c);
    return c;
  }

  it('three tasks integrate one at a time, oldest first, linear; a conflict → a resolution pod; status once per step', async () => {
    const ns = await createNamespace('ctl-mq');
    await controller(ns);
    const watch = await watchIntegrate(client, ns);
    const bare = clusterOrigin(['a', 'b', 'c']);
    const texts = { a: 'A was here', b: 'B was here', c: 'C was here' };
    await apply(ns, 'a', taskSpec(bare, 'a', 10, texts.a));
    await apply(ns, 'b', taskSpec(bare, 'b', 10, texts.b));
    await apply(ns, 'c', taskSpec(bare, 'c', 50, texts.c));
    const run = async (pod: string) =>
      assert.equal((await kubelet.runEpisode(await waitForPod(client, ns, pod))).exitCode, 0, pod);

    await run('a-ep-1');
    await waitForTask(client, ns, 'a', (s) => s.integrate?.result === 'integrated', 60_000);
    await run('b-ep-1'); // edits line 10 as a did: the rebase conflicts
    const resolution = await waitForPod(client, ns, 'b-ep-2', 60_000);
    await run('c-ep-1'); // c finishes while b's resolution waits: it queues behind b
    const queued = await waitForTask(client, ns, 'c', (s) => s.integrate?.result === 'queued', 60_000);
    assert.equal(queued.status?.integrate?.position, 1, JSON.stringify(queued.status?.integrate));
    assert.equal((await getStatus(client, ns, 'b')).integrate?.result, 'conflict');

    let output = '';
    const ended = await kubelet.runEpisode(resolution, { output: (chunk) => (output += chunk) });
    assert.equal(ended.exitCode, 0, output);
    assert.match(output, /These files conflict: shared\.txt/);
    for (const name of ['b', 'c'])
      await waitForTask(client, ns, name, (s) => s.integrate?.result === 'integrated', 60_000);

    // Linear, oldest first: seed, a, b (its rebased commit with the resolution), c; every change kept once.
    assertLinear(bare, 4);
    const at = (rev: string) => git(bare, 'show', `${rev}:shared.txt`);
    assert.ok(at('main~2').includes(texts.a) && !at('main~2').includes(texts.b));
    assert.ok(at('main~1').includes(texts.b) && !at('main~1').includes(texts.c));
    for (const text of Object.values(texts)) assert.equal(at('main').split(text).length, 2, text);
    assert.doesNotMatch(at('main'), /^(<{7}|>{7}|={7})/m);
    const b = await getStatus(client, ns, 'b');
    assert.equal(b.episodes, 2, 'its own episode and the resolution episode');
    assert.equal(b.lastEpisode?.number, 1, "lastEpisode stays the task's own");
    assert.equal(b.integrate?.episodes, 1);
    assert.equal(b.integrate?.queue, 'q', 'named as in the spec');
    assert.deepEqual(
      (await records(client, ns, 'b')).map((r) => [r.number, r.reason]),
      [
        [1, 'ExitedZero'],
        [2, 'MergeQueueResolution'],
      ],
    );
    // Nothing left behind: no scratch branch, no journal.
    assert.deepEqual(heads(bare), ['main', 'work/a', 'work/b', 'work/c']);
    assert.equal(await journals(ns), '');

    // Each status.integrate written once per step of its integration, never again per pass.
    watch.stop();
    const results = (name: string) => (watch.seen.get(name) ?? []).map((i) => `${i.result}@${i.position ?? '-'}`);
    assert.deepEqual(results('a'), ['integrating@0', 'integrated@-']);
    assert.deepEqual(results('b'), ['integrating@0', 'conflict@0', 'integrated@-']);
    assert.deepEqual(results('c'), ['queued@1', 'integrating@0', 'integrated@-']);
  });

  it('a controller stopped while a resolution pod waits: the next one resumes from the journal, nothing twice', async () => {
    const ns = await createNamespace('ctl-mq-restart');
    const first = await controller(ns);
    const bare = clusterOrigin(['x', 'y']);
    await apply(ns, 'x', taskSpec(bare, 'x', 20, 'X was here'));
    await apply(ns, 'y', taskSpec(bare, 'y', 20, 'Y was here'));
    await kubelet.runEpisode(await waitForPod(client, ns, 'x-ep-1'));
    await waitForTask(client, ns, 'x', (s) => s.integrate?.result === 'integrated', 60_000);
    await kubelet.runEpisode(await waitForPod(client, ns, 'y-ep-1'));
    const orphan = await waitForPod(client, ns, 'y-ep-2', 60_000);
    assert.match(await journals(ns), /episodic-merge-queue-q/, 'the journal is on the server before the episode');
    await first.stop();
    controllers.splice(controllers.indexOf(first), 1);

    await controller(ns); // a fresh scratch directory: the clone is gone with the old pod
    const again = await waitFor(
      'the resolution pod started again',
      async () => {
        const pod = await waitForPod(client, ns, 'y-ep-2', 60_000).catch(() => undefined);
        return pod && pod.metadata.uid !== orphan.metadata.uid ? pod : undefined;
      },
      60_000,
    );
    assert.equal((await kubelet.runEpisode(again)).exitCode, 0);
    await waitForTask(client, ns, 'y', (s) => s.integrate?.result === 'integrated', 60_000);
    assertLinear(bare, 3);
    const main = git(bare, 'show', 'main:shared.txt');
    for (const text of ['X was here', 'Y was here']) assert.equal(main.split(text).length, 2, text);
    const y = await getStatus(client, ns, 'y');
    assert.equal(y.episodes, 2, 'the killed resolution episode is not counted; the one that ran is');
    assert.deepEqual(
      (await records(client, ns, 'y')).map((r) => r.number),
      [1, 2],
    );
    assert.equal(await journals(ns), '');
  });
});

async function getStatus(client: KubeClient, ns: string, name: string): Promise<Record<string, any>> {
  const t = await client.get<any>(`/apis/episodic.dev/v1alpha1/namespaces/${ns}/agenttasks/${name}`);
  return t.status ?? {};
}
