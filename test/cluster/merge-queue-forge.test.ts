// The merge queue on a cluster lands a trigger's task with a pull request through the forge's merge API (real
// Gitea, the real apiserver, the test plays the kubelet): a labelled issue → task (integrate into main) → its pod
// pushes episodic/1 → main moves meanwhile → the trigger opens the PR and records it in status.pullRequests →
// the leader's queue rebases, leases the PR's head to the rebased commit and merges it fast-forward-only with
// the token from the trigger's Secret: the PR shows merged, main is linear with the work once, no token in status.
// A merge style the repo refuses → NeedsReview quoting the forge (as `episodic get --kubeconfig` prints it).
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import type { Cluster } from '../support/cluster.ts';
import { git } from '../support/git.ts';
import { type Gitea, startGitea } from '../support/gitea.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import { runCli } from '../support/local.ts';
import {
  clusterWithCrd,
  createNamespace,
  FAKE_CLAUDE,
  FakeKubelet,
  fakeClaudeSpec,
  NODE,
  runRunner,
  startController,
  testClient,
  waitForPod,
  waitForTask,
} from '../support/kubelet.ts';

const TRIGGER_CRD = path.join(import.meta.dirname, '..', '..', 'crds', 'episodic.dev_agenttriggers.yaml');
const OWNER = 'episodic-admin';
const REPO = 'mq-cluster';

interface Pull {
  number: number;
  state: string;
  merged: boolean;
  head: { ref: string; sha: string };
}

describe('cluster merge queue: a task with a PR merged through the Gitea API', {
  skip: skipCluster,
  timeout: SUITE_HANG_GUARD_MS,
}, () => {
  let cluster: Cluster;
  let gitea: Gitea;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  let carol: { name: string; token: string };
  let controller: ClusterController | undefined;
  let ns: string;
  const apply = (doc: object) => kubectl(['apply', '-f', '-'], { input: JSON.stringify(doc) });

  before(
    async () => {
      cluster = await clusterWithCrd();
      await kubectl(['apply', '--server-side', '--force-conflicts', '-f', TRIGGER_CRD]);
      await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/agenttriggers.episodic.dev']);
      ns = await createNamespace('mq-forge');
      gitea = await startGitea();
      client = await testClient(cluster);
      kubelet = new FakeKubelet(client);
      carol = await gitea.createUser('carol'); // not the controller's own user: its items never trigger
      // Through stdin: the token never in argv. One Secret for the trigger's forge and the tasks' git.
      await apply({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'gitea', namespace: ns },
        stringData: { token: gitea.adminToken, GIT_USERNAME: OWNER, GIT_TOKEN: gitea.adminToken },
      });
      const gitDir = mkdtempSync(path.join(os.tmpdir(), 'episodic-mqf-git-'));
      controller = await startController(cluster, { namespace: ns, gitDir });
    },
    { timeout: 30 * 60_000 },
  );
  after(async () => {
    await controller?.stop();
    client?.close();
    await gitea?.stop();
  });

  /**
   * `repo` with a labelled issue, trigger `name` (its task NAME-1 integrates into main, its PR based on main),
   * the task's pod run (its work pushed to episodic/1) while main moves; then the queue's outcome in its status.
   */
  async function landed(name: string, repo: string, refuseFastForward = false) {
    await gitea.createRepo(OWNER, repo, { autoInit: true });
    if (refuseFastForward)
      await gitea.api('PATCH', `/repos/${OWNER}/${repo}`, { body: { allow_fast_forward_only_merge: false } });
    await gitea.addCollaborator(OWNER, repo, carol.name, 'write');
    const label = await gitea.createLabel(OWNER, repo, 'agent');
    await gitea.createIssue(OWNER, repo, { title: 'Add a fix', labels: [label.id] }, carol.token);
    const script = path.join(mkdtempSync(path.join(os.tmpdir(), 'episodic-mqf-')), 'agent.json');
    writeFileSync(script, JSON.stringify({ default: { mode: 'success', writeFiles: { 'FIX.md': 'fixed #1\n' } } }));
    const url = gitea.cloneUrl(OWNER, repo);
    await apply({
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTrigger',
      metadata: { name, namespace: ns },
      spec: {
        source: {
          gitea: {
            apiURL: gitea.url,
            repo: `${OWNER}/${repo}`,
            labels: ['agent'],
            pollSeconds: 3600,
            tokenSecretRef: { name: 'gitea', key: 'token' },
          },
        },
        report: { pullRequest: { base: 'main' } },
        template: {
          spec: fakeClaudeSpec(
            {
              // The template's ref is not `into` (refused); each item's task works on episodic/NUMBER.
              workspace: { git: { url, ref: 'episodic/start', secretRef: { name: 'gitea' } } },
              integrate: { into: 'main', queue: 'q' },
            },
            { command: [NODE, FAKE_CLAUDE, '-p', `--fake-script=${script}`] },
          ),
        },
      },
    });
    const pod = await waitForPod(client, ns, `${name}-1-ep-1`, 60_000);
    const running = await kubelet.setRunning(pod);
    const ran = await runRunner(pod, { env: { GIT_USERNAME: OWNER, GIT_TOKEN: gitea.adminToken } });
    // main moves while the task's work waits: the queue has a real rebase to do.
    await gitea.api('POST', `/repos/${OWNER}/${repo}/contents/OTHER.md`, {
      body: { content: Buffer.from('other\n').toString('base64'), branch: 'main', message: 'other work' },
    });
    await kubelet.terminate(running, { exitCode: ran.exitCode, message: ran.message });
    const done = await waitForTask(
      client,
      ns,
      `${name}-1`,
      (s) => s.integrate?.result === 'integrated' || s.integrate?.result === 'needsReview',
      120_000,
    );
    return done.status as Record<string, any>;
  }

  /** A fresh clone of `repo`'s main. */
  function mainClone(repo: string): string {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'episodic-mqf-main-'));
    git(dir, 'clone', '--quiet', '--branch', 'main', gitea.cloneUrl(OWNER, repo), 'c');
    return path.join(dir, 'c');
  }

  /** The one PR of `repo`. */
  async function thePull(repo: string): Promise<Pull> {
    const pulls = await gitea.api<Pull[]>('GET', `/repos/${OWNER}/${repo}/pulls`, { query: { state: 'all' } });
    assert.equal(pulls.length, 1, 'one PR');
    return pulls[0] as Pull;
  }

  it("rebased onto the moved main, its PR's head leased and merged through the API; main linear with it once", async () => {
    const st = await landed('mq', REPO);

    assert.equal(st.integrate?.result, 'integrated', JSON.stringify(st.integrate));
    assert.equal(st.phase, 'Succeeded');
    const pr = await thePull(REPO);
    assert.equal(pr.merged, true, 'the PR shows merged (through the API, not a push to main)');
    assert.equal(st.integrate?.pullRequest, pr.number);

    const c = mainClone(REPO);
    assert.equal(git(c, 'rev-list', '--merges', 'HEAD'), '', 'no merge commit on main');
    assert.equal(git(c, 'rev-list', '--count', 'HEAD', '--', 'FIX.md'), '1', "the task's commit once on main");
    assert.equal(git(c, 'rev-list', '--count', 'HEAD', '--', 'OTHER.md'), '1', 'the commit main got meanwhile kept');
    assert.equal(git(c, 'rev-parse', 'HEAD'), st.integrate?.commit, 'main is the rebased commit (a fast-forward)');
    assert.equal(pr.head.sha, st.integrate?.commit, "the PR's head was leased to the rebased commit");
    const task = await kubectl(['get', 'agenttask', 'mq-1', '-n', ns, '-o', 'json']);
    const trigger = await kubectl(['get', 'agenttrigger', 'mq', '-n', ns, '-o', 'json']);
    assert.ok(!`${task}${trigger}`.includes(gitea.adminToken), 'the token is in no status');
  });

  it('the forge refuses the merge → NeedsReview quoting its answer (get --kubeconfig shows it); main untouched', async () => {
    const repo = 'mq-cluster-refused';
    const st = await landed('mqr', repo, true);
    assert.equal(st.integrate?.result, 'needsReview', JSON.stringify(st.integrate));
    assert.equal(st.phase, 'NeedsReview');
    assert.equal(st.reason, 'IntegrationFailed');
    assert.match(st.message ?? '', /merge queue q: the forge refused to merge pull request #2: gitea POST .*-> 405/);
    assert.equal((await thePull(repo)).state, 'open');
    assert.equal(git(mainClone(repo), 'rev-list', '--count', 'HEAD', '--', 'FIX.md'), '0', 'main has not the work');
    assert.equal(st.integrate?.pullRequest, 2);
    const got = await runCli(['get', 'mqr-1', '--kubeconfig', cluster.kubeconfigPath, '-n', ns]);
    assert.match(got.stdout, /\nMerge queue q: needsReview \(pull request #2\);.*\n {2}forge refused: .*405/);
    assert.ok(!JSON.stringify(st).includes(gitea.adminToken), 'the token is not in status');
  });
});
