// AgentTriggers on the real kube-apiserver, with the real Gitea: a schedule's missed tick and a labelled
// issue each become one AgentTask owned by its trigger (ownerReference + label), the Gitea token read from a
// Secret; a controller restart creates nothing twice; the token appears in no status. A reporting trigger's
// item goes the whole way: the pod's runner pushes the agent's commit to episodic/1, the controller opens the
// PR that closes the issue and edits its one comment as the task moves. With --hooks-addr a signed Gitea
// delivery to a webhook trigger becomes one owned AgentTask (its secret from a Secret); a bad signature is 401
// and a replay is ignored; a delivery that wakes the poll of the same item adds nothing.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import { type Gitea, startGitea } from '../support/gitea.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import type { Cluster } from '../support/cluster.ts';
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
import { waitFor } from '../support/wait.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

const TRIGGER_CRD = path.join(import.meta.dirname, '..', '..', 'crds', 'episodic.dev_agenttriggers.yaml');
const TICK = new Date('2026-01-01T02:00:00Z'); // 03:00 in Berlin
const TICK_TASK = 'yearly-20260101-0200'; // its tick in UTC

interface Obj {
  metadata: {
    name: string;
    uid: string;
    labels?: Record<string, string>;
    ownerReferences?: Array<{ kind: string; name: string; uid: string }>;
  };
  spec: { prompt?: string; workspace?: { git?: { ref?: string } } };
  status?: Record<string, unknown>;
}

describe('AgentTriggers on a real apiserver', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let cluster: Cluster;
  let gitea: Gitea;
  let ns: string;
  let controller: ClusterController | undefined;
  const apply = (doc: object) => kubectl(['apply', '-f', '-'], { input: JSON.stringify(doc) });
  const get = async (kind: string, name: string): Promise<Obj> =>
    JSON.parse(await kubectl(['get', kind, name, '-n', ns, '-o', 'json']));
  const tasks = async () =>
    (JSON.parse(await kubectl(['get', 'agenttasks', '-n', ns, '-o', 'json'])) as { items: Obj[] }).items
      .map((t) => t.metadata.name)
      .sort();

  before(
    async () => {
      cluster = await clusterWithCrd();
      await kubectl(['apply', '--server-side', '--force-conflicts', '-f', TRIGGER_CRD]);
      await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/agenttriggers.episodic.dev']);
      ns = await createNamespace('triggers');
      gitea = await startGitea();
      const alice = await gitea.createUser('alice');
      await gitea.createRepo('episodic-admin', 'widgets');
      await gitea.addCollaborator('episodic-admin', 'widgets', 'alice', 'write');
      const label = await gitea.createLabel('episodic-admin', 'widgets', 'agent');
      await gitea.createIssue(
        'episodic-admin',
        'widgets',
        { title: 'Crash', body: 'boom', labels: [label.id] },
        alice.token,
      );
      await gitea.createIssue('episodic-admin', 'widgets', { title: 'Other', body: 'no label' }, alice.token);
      // Through stdin: the token never in argv.
      await apply({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'gitea', namespace: ns },
        stringData: { token: gitea.adminToken },
      });
      const template = { spec: { ...fakeClaudeSpec(), prompt: 'Fix #{{item.number}}: {{item.title}} {{tick}}' } };
      const trigger = (name: string, source: object) =>
        apply({
          apiVersion: 'episodic.dev/v1alpha1',
          kind: 'AgentTrigger',
          metadata: { name, namespace: ns },
          spec: { source, template },
        });
      await trigger('yearly', { schedule: { cron: '0 3 1 1 *', timeZone: 'Europe/Berlin' } });
      // Last handled before the 2026 tick, as if the controller had been down since.
      await kubectl([
        'patch',
        'agenttrigger',
        'yearly',
        '-n',
        ns,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: { lastTick: '2025-06-01T00:00:00.000Z' } }),
      ]);
      await trigger('fix', {
        gitea: {
          apiURL: gitea.url,
          repo: 'episodic-admin/widgets',
          labels: ['agent'],
          tokenSecretRef: { name: 'gitea', key: 'token' },
        },
      });
    },
    { timeout: 30 * 60_000 },
  );
  after(async () => {
    await controller?.stop();
    await gitea?.stop();
  });

  it('a missed tick and a labelled issue each become one AgentTask owned by its trigger', async () => {
    controller = await startController(cluster, { namespace: ns });
    await waitFor('the two tasks', async () => (await tasks()).length === 2 && tasks(), 60_000);
    assert.deepEqual(await tasks(), ['fix-1', TICK_TASK].sort());
    for (const [task, trigger] of [
      ['fix-1', 'fix'],
      [TICK_TASK, 'yearly'],
    ]) {
      const owner = await get('agenttrigger', trigger);
      const t = await get('agenttask', task);
      assert.equal(t.metadata.labels?.['episodic.dev/trigger'], trigger);
      assert.deepEqual(
        t.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.uid]),
        [['AgentTrigger', trigger, owner.metadata.uid]],
      );
    }
    assert.equal((await get('agenttask', 'fix-1')).spec.prompt, 'Fix #1: Crash {{tick}}');
    assert.equal(
      (await get('agenttask', TICK_TASK)).spec.prompt,
      `Fix #{{item.number}}: {{item.title}} ${TICK.toISOString()}`,
    );
    const fix = await waitFor('fix status', async () => {
      const s = (await get('agenttrigger', 'fix')).status;
      return s?.tasksCreated === 1 && s;
    });
    // Without a command the forge filters by label: only the labelled issue is listed.
    assert.equal(fix.itemsSeen, 1);
    assert.ok(!JSON.stringify(fix).includes(gitea.adminToken), 'the token is not in status');
    const yearly = await waitFor(
      'yearly status',
      async () => (await get('agenttrigger', 'yearly')).status?.lastTick === TICK.toISOString(),
    );
    assert.ok(yearly);
  });

  it('a restarted controller polls again and creates nothing twice', async () => {
    const before = (await get('agenttrigger', 'fix')).status?.lastPollAt;
    await controller?.stop();
    controller = await startController(cluster, { namespace: ns });
    // A poll that went through (another suite's CRD apply can make the apiserver answer 429 for a moment).
    await waitFor(
      'a new poll without an error',
      async () => {
        const s = (await get('agenttrigger', 'fix')).status;
        return s?.lastPollAt !== before && s?.lastError === undefined;
      },
      60_000,
    );
    await controller.idle();
    assert.deepEqual(await tasks(), ['fix-1', TICK_TASK].sort());
  });

  it('labelled issue → task → the pod pushes episodic/1 → one PR closing it; the comment follows the task', async () => {
    const repo = 'publish';
    await gitea.createRepo('episodic-admin', repo, { autoInit: true });
    const carol = await gitea.createUser('carol');
    await gitea.addCollaborator('episodic-admin', repo, carol.name, 'write'); // else her labels are dropped
    const label = await gitea.createLabel('episodic-admin', repo, 'agent');
    // Not by the controller's own user: its items never trigger.
    await gitea.createIssue('episodic-admin', repo, { title: 'Ship it', labels: [label.id] }, carol.token);
    const script = path.join(mkdtempSync(path.join(os.tmpdir(), 'episodic-pub-')), 'agent.json');
    writeFileSync(script, JSON.stringify({ default: { mode: 'success', writeFiles: { 'FIX.md': 'fixed\n' } } }));
    await apply({
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTrigger',
      metadata: { name: 'pub', namespace: ns },
      spec: {
        source: {
          gitea: {
            apiURL: gitea.url,
            repo: `episodic-admin/${repo}`,
            labels: ['agent'],
            pollSeconds: 3600,
            tokenSecretRef: { name: 'gitea', key: 'token' },
          },
        },
        report: { comment: true, pullRequest: {} },
        template: {
          spec: fakeClaudeSpec(
            { workspace: { git: { url: gitea.cloneUrl('episodic-admin', repo), ref: 'main' } } },
            { command: [NODE, FAKE_CLAUDE, '-p', `--fake-script=${script}`] },
          ),
        },
      },
    });
    const client = await testClient(cluster);
    const kubelet = new FakeKubelet(client);
    const comments = async () =>
      (await gitea.listComments('episodic-admin', repo, 1)).filter((c) =>
        c.body.startsWith('<!-- episodic:report pub/pub-1 -->'),
      );
    const pod = await waitForPod(client, ns, 'pub-1-ep-1', 60_000).catch(async (err: Error) => {
      const status = JSON.stringify((await get('agenttrigger', 'pub')).status);
      throw new Error(`${err.message}; trigger status ${status}; tasks ${await tasks()}`);
    });
    assert.equal((await get('agenttask', 'pub-1')).spec.workspace?.git?.ref, 'episodic/1');
    const running = await kubelet.setRunning(pod);
    await waitFor('the comment saying Running', async () =>
      (await comments()).some((c) => c.body.includes('**Running**')),
    );
    // The pod's runner: clones the repo at episodic/1, runs the agent, commits and pushes with the git token.
    const ran = await runRunner(pod, { env: { GIT_USERNAME: 'episodic-admin', GIT_TOKEN: gitea.adminToken } });
    await kubelet.terminate(running, { exitCode: ran.exitCode, message: ran.message });
    await waitForTask(client, ns, 'pub-1', (s) => s.phase === 'Succeeded');
    const pulls = await waitFor('the PR', async () => {
      const list = await gitea.api<Array<{ number: number; html_url: string; body: string; head: { ref: string } }>>(
        'GET',
        `/repos/episodic-admin/${repo}/pulls`,
      );
      return list.length > 0 && list;
    });
    assert.equal(pulls.length, 1);
    assert.equal(pulls[0].head.ref, 'episodic/1');
    assert.match(pulls[0].body, /Closes #1$/);
    const recorded = await waitFor(
      'status.pullRequests',
      // The entry, not the map: an empty one may be written first.
      async () => {
        const pulls = (await get('agenttrigger', 'pub')).status?.pullRequests as Record<string, unknown> | undefined;
        return pulls?.['pub-1'] ? pulls : undefined;
      },
    );
    assert.deepEqual(recorded, { 'pub-1': { number: pulls[0].number, url: pulls[0].html_url } });
    const final = await waitFor('the comment saying Succeeded', async () => {
      const list = await comments();
      return list.some((c) => c.body.includes('**Succeeded**')) && list;
    });
    assert.equal(final.length, 1, 'one comment, edited in place');
  });

  it('a stuck task: NeedsReview comment → a reader cannot resume it, a writer can → its next episode', async () => {
    const repo = 'stuck';
    await gitea.createRepo('episodic-admin', repo);
    const dave = await gitea.createUser('dave');
    const reader = await gitea.createUser('reader');
    await gitea.addCollaborator('episodic-admin', repo, dave.name, 'write');
    await gitea.addCollaborator('episodic-admin', repo, reader.name, 'read');
    const label = await gitea.createLabel('episodic-admin', repo, 'agent');
    await gitea.createIssue('episodic-admin', repo, { title: 'Hard', labels: [label.id] }, dave.token);
    await apply({
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTrigger',
      metadata: { name: 'stuck', namespace: ns },
      spec: {
        source: {
          gitea: {
            apiURL: gitea.url,
            repo: `episodic-admin/${repo}`,
            labels: ['agent'],
            command: { text: '/episodic', minPermission: 'write' },
            pollSeconds: 10,
            tokenSecretRef: { name: 'gitea', key: 'token' },
          },
        },
        report: { comment: true },
        template: {
          spec: fakeClaudeSpec({
            backoff: { initialSeconds: 0, factor: 1, maxSeconds: 0 },
            breaker: { noProgressEpisodes: 1, halfOpenEpisodes: 0, sameErrorEpisodes: 0 },
            resume: { policy: 'Manual' },
          }),
        },
      },
    });
    const client = await testClient(cluster);
    const kubelet = new FakeKubelet(client);
    const report = async () =>
      (await gitea.listComments('episodic-admin', repo, 1)).find((c) =>
        c.body.startsWith('<!-- episodic:report stuck/stuck-1 -->'),
      );
    await kubelet.runEpisode(await waitForPod(client, ns, 'stuck-1-ep-1', 60_000), {
      env: { FAKE_AGENT_MODE: 'continue' },
    });
    await waitFor('the NeedsReview comment', async () => (await report())?.body.includes('**NeedsReview**'));
    // The reader's command first: the writer's resume is handled after it, in the same or a later poll.
    await gitea.comment('episodic-admin', repo, 1, '/episodic resume', reader.token);
    const byDave = await gitea.comment('episodic-admin', repo, 1, '/episodic resume', dave.token);
    const resumed = await waitForTask(
      client,
      ns,
      'stuck-1',
      (s) => s.resume?.handledToken === `gitea-comment-${byDave.id}`,
      60_000,
    );
    assert.equal(resumed.status?.resume?.lastResumeBy, 'user:gitea:dave');
    const resumes = (resumed.status?.audit ?? []).filter((a: { action: string }) => a.action === 'Resumed');
    assert.deepEqual(
      resumes.map((a: { by: string }) => a.by),
      ['user:gitea:dave'],
      'only the writer resumed it',
    );
    await waitForPod(client, ns, 'stuck-1-ep-2', 30_000);
    assert.deepEqual(
      (await tasks()).filter((t) => t.startsWith('stuck-')),
      ['stuck-1'],
      'a resume is not a re-run',
    );
  });

  it('--hooks-addr: a signed delivery → one owned AgentTask; bad signature 401; replay ignored; poll + hook one task', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'hook', namespace: ns },
      stringData: { secret: 'hook-secret' },
    });
    const secretRef = { name: 'hook', key: 'secret' };
    const template = { spec: { ...fakeClaudeSpec(), prompt: 'Hooked #{{item.number}}: {{item.title}}' } };
    await apply({
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTrigger',
      metadata: { name: 'hooked', namespace: ns },
      spec: {
        source: { webhook: { forge: 'gitea', repo: 'episodic-admin/widgets', labels: ['agent'], secretRef } },
        template,
      },
    });
    const fixSource = (await get('agenttrigger', 'fix')) as Obj & { spec: { source: { gitea: object } } };
    await kubectl([
      'patch',
      'agenttrigger',
      'fix',
      '-n',
      ns,
      '--type=merge',
      '-p',
      JSON.stringify({
        spec: { source: { gitea: { ...fixSource.spec.source.gitea, webhook: { secretRef } } } },
      }),
    ]);
    await controller?.stop();
    const restarted = new Date().toISOString();
    controller = await startController(cluster, { namespace: ns, hooksAddr: '127.0.0.1:0' });
    const url = controller.hooks?.url;
    assert.ok(url, 'serving hooks');
    const issue = (number: number, title: string) => ({
      action: 'opened',
      number,
      issue: {
        number,
        title,
        body: 'boom',
        html_url: `${gitea.url}/episodic-admin/widgets/issues/${number}`,
        state: 'open',
        user: { login: 'alice' },
        labels: [{ name: 'agent' }],
      },
      repository: { full_name: 'episodic-admin/widgets' },
    });
    const deliver = async (trigger: string, payload: object, id: string, secret = 'hook-secret') => {
      const body = JSON.stringify(payload);
      const res = await fetch(`${url}/hooks/${ns}/${trigger}`, {
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          'x-gitea-event': 'issues',
          'x-gitea-delivery': id,
          'x-gitea-signature': createHmac('sha256', secret).update(body).digest('hex'),
        },
      });
      return [res.status, (await res.text()).trim()];
    };
    // Until the new controller has the trigger (its informer synced, then leading), a delivery is refused.
    await waitFor('the hook served', async () => (await deliver('hooked', issue(5, 'Bad'), 'd-0', 'guess'))[0] === 401);
    assert.deepEqual(await deliver('hooked', issue(5, 'Forged'), 'd-1', 'guess'), [401, 'bad signature']);
    assert.deepEqual(await deliver('hooked', issue(1, 'Crash'), 'd-2'), [202, 'accepted']);
    const hooked = await get('agenttask', 'hooked-1');
    const owner = await get('agenttrigger', 'hooked');
    assert.equal(hooked.metadata.labels?.['episodic.dev/trigger'], 'hooked');
    assert.deepEqual(
      hooked.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.uid]),
      [['AgentTrigger', 'hooked', owner.metadata.uid]],
    );
    assert.equal(hooked.spec.prompt, 'Hooked #1: Crash');
    assert.deepEqual(await deliver('hooked', issue(1, 'Crash'), 'd-2'), [202, 'replayed delivery ignored']);
    assert.deepEqual(await deliver('hooked', { ...issue(1, 'Crash'), action: 'edited' }, 'd-3'), [202, 'accepted']);
    // The poll trigger's delivery wakes its poll: it reads the forge and finds #1 done.
    const before = await waitFor('the first poll after the restart', async () => {
      const at = (await get('agenttrigger', 'fix')).status?.lastPollAt as string | undefined;
      return at && at >= restarted && at;
    });
    assert.deepEqual(await deliver('fix', issue(1, 'Crash'), 'd-4'), [202, 'accepted']);
    await waitFor('the woken poll', async () => (await get('agenttrigger', 'fix')).status?.lastPollAt !== before);
    await controller.idle();
    assert.deepEqual(
      (await tasks()).filter((t) => /^(fix|hooked)-/.test(t)),
      ['fix-1', 'hooked-1'],
    );
  });
});
