// kill -9 of a cluster controller during the merge queue's push (issue 32 §3), against the real API server
// with the test kubelet and a real bare repository. The killed controller's clone is in its pod's scratch
// directory and is lost with it: the new leader starts with none, only the journal ConfigMap (at stage push).
// The remote's receive-pack is a wrapper that either lands the push and then hangs, or hangs and never lands
// it; either way the new leader finishes the integration once, and `into` never moves backwards.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
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
  startControllerProcess,
  testClient,
  waitForPod,
  waitForTask,
} from '../support/kubelet.ts';
import type { ControllerProcess } from '../support/kubelet.ts';
import { git } from '../support/git.ts';
import { numberedLines, origin } from '../support/merge-queue.ts';
import { waitFor } from '../support/wait.ts';

const AGENT = join(repoRoot, 'test/agents/merge-agent.mjs');

function taskSpec(bare: string, name: string): Record<string, unknown> {
  const env = { MERGE_AGENT_FILE: 'shared.txt', MERGE_AGENT_LINE: '5', MERGE_AGENT_TEXT: `${name} was here` };
  return {
    prompt: 'Edit shared.txt.',
    agent: {
      image: 'ghcr.io/example/agent:1',
      command: [NODE, AGENT],
      output: 'text',
      env: Object.entries(env).map(([n, value]) => ({ name: n, value })),
    },
    completion: { onExitZero: true },
    backoff: { initialSeconds: 0.2, factor: 1, maxSeconds: 0.5 },
    limits: { maxEpisodes: 3, episodeTimeoutSeconds: 600 },
    workspace: { git: { url: bare, ref: `work/${name}` } },
    integrate: { into: 'main', queue: 'q' },
  };
}

describe('cluster controller: kill -9 during the merge queue push', {
  skip: skipCluster,
  timeout: SUITE_HANG_GUARD_MS,
}, () => {
  let cluster: Cluster;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  const processes: ControllerProcess[] = [];
  const controllers: ClusterController[] = [];

  before(async () => {
    cluster = await clusterWithCrd();
    client = await testClient(cluster);
    kubelet = new FakeKubelet(client);
  });
  after(async () => {
    for (const c of controllers) await c.stop();
    await Promise.all(processes.map((p) => p.kill()));
    client?.close();
  });

  /**
   * A controller process whose queue clone (made ahead in its scratch directory) pushes through `body` as the
   * remote's receive-pack; killed with SIGKILL once the wrapper writes MARK; then a new controller with a fresh
   * scratch directory. Returns the remote, `main` before the kill and the journal's stage at the kill.
   */
  async function killedDuringPush(name: string, body: string) {
    const ns = await createNamespace('ctl-mq-kill');
    const dir = mkdtempSync(join(tmpdir(), 'episodic-mq-kill-'));
    const bare = origin(dir, { shared: numberedLines(20), branches: [`work/${name}`] });
    const mark = join(dir, 'mark');
    const wrapper = join(dir, 'slow-receive-pack');
    writeFileSync(wrapper, `#!/bin/sh\nMARK=${mark}\nGO=${mark}.go\n${body}\n`);
    chmodSync(wrapper, 0o755);
    const scratch = join(dir, 'tmp');
    const clone = join(scratch, 'episodic-git', '.merge-queue', ns, 'q');
    mkdirSync(join(clone, '..'), { recursive: true });
    git(dir, 'clone', '--quiet', bare, clone);
    git(clone, 'config', 'remote.origin.receivepack', wrapper);

    const first = await startControllerProcess(cluster, ['--namespace', ns], { TMPDIR: scratch });
    processes.push(first);
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, name, taskSpec(bare, name)) });
    assert.equal((await kubelet.runEpisode(await waitForPod(client, ns, `${name}-ep-1`))).exitCode, 0);
    await waitFor('the push under way', async () => existsSync(mark), 60_000);
    const before = git(bare, 'rev-parse', 'main');
    assert.equal(await first.kill('SIGKILL'), 'SIGKILL');
    writeFileSync(`${mark}.go`, ''); // the wrapper the killed push left behind ends
    const journal = await kubectl([
      'get',
      'configmap',
      '-n',
      ns,
      'episodic-merge-queue-q',
      '-o',
      'jsonpath={.data.journal}',
    ]);
    const stage = JSON.parse(journal).stage;

    const next = await startController(cluster, {
      namespace: ns,
      gitDir: mkdtempSync(join(tmpdir(), 'episodic-mq-new-')),
    });
    controllers.push(next);
    const done = await waitForTask(client, ns, name, (s) => s.integrate?.result === 'integrated', 60_000);
    return { ns, bare, before, stage, done };
  }

  function assertOnceForward(bare: string, before: string, name: string, commit: string | undefined): void {
    const main = git(bare, 'show', 'main:shared.txt').split('\n');
    assert.equal(main.filter((l) => l === `${name} was here`).length, 1, 'the change once on main');
    assert.equal(git(bare, 'rev-list', '--count', 'main'), '2', 'seed and the task: pushed once');
    assert.equal(git(bare, 'rev-list', '--merges', 'main'), '', 'linear');
    git(bare, 'merge-base', '--is-ancestor', before, 'main'); // throws if main moved backwards
    assert.equal(commit, git(bare, 'rev-parse', 'main'));
    assert.deepEqual(git(bare, 'for-each-ref', '--format=%(refname:short)', 'refs/heads').split('\n').sort(), [
      'main',
      `work/${name}`,
    ]);
  }

  it('the push landed, the controller never heard: the new leader finds it on main and pushes nothing again', async () => {
    const body = 'git-receive-pack "$@"\necho landed > $MARK\nwhile [ ! -f $GO ]; do sleep 0.05; done';
    const { ns, bare, before, stage, done } = await killedDuringPush('p1', body);
    assert.equal(stage, 'push', 'killed at the push step');
    assert.equal(git(bare, 'rev-parse', 'main'), before, 'main is the commit that landed at the kill');
    assertOnceForward(bare, before, 'p1', done.status?.integrate?.commit);
    assert.equal(await kubectl(['get', 'configmaps', '-n', ns, '-l', 'episodic.dev/merge-queue', '-o', 'name']), '');
  });

  it('the push never landed: the new leader, without the old clone, rebases again and pushes once', async () => {
    const body = 'echo pushing > $MARK\nwhile [ ! -f $GO ]; do sleep 0.05; done\nexit 1';
    const { ns, bare, before, stage, done } = await killedDuringPush('n1', body);
    assert.equal(stage, 'push', 'killed at the push step');
    assert.equal(git(bare, 'rev-parse', 'main~1'), before, 'main was still the seed at the kill');
    assertOnceForward(bare, before, 'n1', done.status?.integrate?.commit);
    assert.equal(await kubectl(['get', 'configmaps', '-n', ns, '-l', 'episodic.dev/merge-queue', '-o', 'name']), '');
  });
});
