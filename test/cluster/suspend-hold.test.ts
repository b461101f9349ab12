// The suspend hold on a cluster, against the real apiserver: the console's Suspend / Unsuspend (served by
// `episodic controller --console-listen`, in headless Chromium) and `episodic suspend --kubeconfig` set the
// episodic.dev/suspended annotation, never spec; the controller stops the episode, says who suspended the
// task, starts the next one once the hold is lifted, and audits both.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { launchBrowser, screenshot } from '../support/browser.ts';
import { kubeconfigPath, kubectl, repoRoot, runMain, skipCluster } from '../support/cluster.ts';
import {
  agentTaskManifest,
  clusterWithCrd,
  createNamespace,
  fakeClaudeSpec,
  getTask,
  startControllerProcess,
  testClient,
  waitForPod,
  waitForTask,
} from '../support/kubelet.ts';
import { tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

describe('cluster suspend hold', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  it('Suspend and Unsuspend in the console set the annotation, never spec; the episode stops and the next starts; both audited', async () => {
    const cluster = await clusterWithCrd();
    const ns = await createNamespace('hold');
    const client = await testClient(cluster);
    const ctl = await startControllerProcess(cluster, ['--namespace', ns, '--console-listen', '127.0.0.1:0']);
    const browser = await launchBrowser();
    try {
      const url = await waitFor('the console', () =>
        (ctl.logs.find((l) => l.msg === 'serving the console')?.url as string | undefined)?.replace(/\/$/, ''),
      );
      await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'held', fakeClaudeSpec()) });
      await waitForPod(client, ns, 'held-ep-1');
      const before = await waitForTask(client, ns, 'held', (s) => s.phase === 'Running');
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(`${url}/#/task/${ns}/held`);
      await page.waitForSelector('[data-testid=phase]:text("Running")');
      page.on('dialog', (d) => void d.accept());
      await page.click('[data-testid=suspend]');
      await page.waitForSelector('[data-testid=action-result]:text("suspend requested by")');
      // The apiserver is shared: a CRD applied by an older checkout lacks the Suspended audit action.
      await page.waitForSelector('[data-testid=phase]:text("Suspended")').catch((err: Error) => {
        const warnings = ctl.logs.filter((l) => l.level >= 40).slice(-3);
        throw new Error(`${err.message}\ncontroller warnings: ${JSON.stringify(warnings)}`);
      });
      const suspended = await waitForTask(client, ns, 'held', (s) => s.lastEpisode?.outcome === 'cancelled');
      assert.equal(suspended.metadata.annotations?.['episodic.dev/suspended'], 'true');
      assert.match(suspended.metadata.annotations?.['episodic.dev/suspended-by'], /^.+ via console$/);
      assert.match(suspended.status.message, /^task is suspended by .+ via console$/);
      assert.deepEqual(suspended.spec, before.spec);
      assert.equal(suspended.metadata.generation, before.metadata.generation);
      await page.waitForSelector('[data-testid=unsuspend]');

      await page.click('[data-testid=unsuspend]');
      await waitForPod(client, ns, 'held-ep-2');
      await page.waitForSelector('[data-testid=audit] td:text("Unsuspended")');
      const lifted = await getTask(client, ns, 'held');
      assert.equal(lifted?.metadata.annotations?.['episodic.dev/suspended'], 'false');
      assert.deepEqual(
        lifted?.status.audit.map((a: { action: string }) => a.action),
        ['Suspended', 'Unsuspended'],
      );
      for (const a of lifted?.status.audit ?? []) assert.match(a.by, /^user:.+ via console$/);
      await screenshot(page, tempDir(), 'cluster-unsuspended.png');
    } finally {
      await browser.close();
      await ctl.kill('SIGINT');
      client.close();
    }
  });

  it('`episodic suspend --kubeconfig` holds a task the spec does not suspend; `unsuspend` lifts it', async () => {
    const cluster = await clusterWithCrd();
    const ns = await createNamespace('hold-cli');
    const client = await testClient(cluster);
    const ctl = await startControllerProcess(cluster, ['--namespace', ns]);
    try {
      await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'other', fakeClaudeSpec()) });
      await waitForPod(client, ns, 'other-ep-1');
      const cli = ['--kubeconfig', kubeconfigPath, '-n', ns, '--by', 'dave'];
      const held = await runMain(['suspend', 'other', ...cli]);
      assert.equal(held.code, 0, held.stderr);
      assert.match(
        held.stdout,
        new RegExp(`^suspend hold set on ${ns}/other by dave \\(annotation episodic.dev/suspended\\)`),
      );
      await waitForTask(
        client,
        ns,
        'other',
        (s) => s.phase === 'Suspended' && s.message === 'task is suspended by dave',
      );
      const lifted = await runMain(['unsuspend', 'other', ...cli]);
      assert.equal(lifted.code, 0, lifted.stderr);
      await waitForPod(client, ns, 'other-ep-2');
      const task = await waitForTask(client, ns, 'other', (s) => s.audit?.length === 2);
      assert.deepEqual(
        task.status.audit.map((a: { action: string; by: string }) => [a.action, a.by]),
        [
          ['Suspended', 'user:dave'],
          ['Unsuspended', 'user:dave'],
        ],
      );
      const missing = await runMain(['suspend', 'nope', ...cli]);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, new RegExp(`AgentTask ${ns}/nope not found`));
    } finally {
      await ctl.kill('SIGINT');
      client.close();
    }
  });

  it("the spec guard lets the controller's ServiceAccount set a person's suspend and resume annotations, no other", async () => {
    await clusterWithCrd();
    const ns = await createNamespace('hold-guard');
    const user = `system:serviceaccount:${ns}:guarded`;
    // The shipped policy (manifests/spec-guard.yaml), named and matched for a user of this test only.
    const docs = parseAllDocuments(readFileSync(join(repoRoot, 'manifests/spec-guard.yaml'), 'utf8')).map((d) =>
      d.toJS(),
    );
    const policy = docs.find((d) => d.kind === 'ValidatingAdmissionPolicy');
    const binding = docs.find((d) => d.kind === 'ValidatingAdmissionPolicyBinding');
    const name = `${ns}-spec-guard`;
    policy.metadata = { name };
    policy.spec.matchConditions[0].expression = `request.userInfo.username == "${user}"`;
    binding.metadata = { name };
    binding.spec.policyName = name;
    const role = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'patch-tasks', namespace: ns },
      rules: [{ apiGroups: ['episodic.dev'], resources: ['agenttasks'], verbs: ['get', 'patch'] }],
    };
    const roleBinding = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'patch-tasks', namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'patch-tasks' },
      subjects: [{ kind: 'User', name: user }],
    };
    const items = [policy, binding, role, roleBinding];
    await kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }) });
    try {
      const task = JSON.parse(agentTaskManifest(ns, 'guarded', fakeClaudeSpec()));
      task.metadata.annotations = { owner: 'gitops' };
      await kubectl(['apply', '-f', '-'], { input: JSON.stringify(task) });
      const patch = (annotations: Record<string, string | null>, dryRun = false) =>
        kubectl([
          ...['--as', user, '-n', ns, 'patch', 'agenttask', 'guarded', '--type=merge'],
          ...['-p', JSON.stringify({ metadata: { annotations } }), ...(dryRun ? ['--dry-run=server'] : [])],
        ]);
      await waitFor(
        'the policy to be active',
        () =>
          patch({ x: 'y' }, true).then(
            () => false,
            (err) => /may not change an AgentTask's annotations/.test(String(err)),
          ),
        30_000,
      );
      await patch({ 'episodic.dev/suspended': 'true', 'episodic.dev/suspended-by': 'alice via console' });
      await patch({
        'episodic.dev/resume': 'tok-1',
        'episodic.dev/resume-by': 'alice',
        'episodic.dev/resume-episodes': null,
      });
      await assert.rejects(patch({ owner: 'me' }), /may not change an AgentTask's annotations/);
      await assert.rejects(patch({ owner: null }), /may not change an AgentTask's annotations/);
      await assert.rejects(
        patch({ 'episodic.dev/suspended': 'false', extra: '1' }),
        /may not change an AgentTask's annotations/,
      );
      const annotations = JSON.parse(await kubectl(['-n', ns, 'get', 'agenttask', 'guarded', '-o', 'json'])).metadata
        .annotations;
      assert.equal(annotations.owner, 'gitops');
      assert.equal(annotations['episodic.dev/suspended'], 'true');
      assert.equal(annotations['episodic.dev/resume'], 'tok-1');
    } finally {
      await kubectl(['delete', 'validatingadmissionpolicybinding,validatingadmissionpolicy', name]);
    }
  });
});
