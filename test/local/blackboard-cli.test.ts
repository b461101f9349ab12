// `episodic blackboard get|set|del` locally (the state dir's file the set/del ops write) and with
// --kubeconfig (ConfigMap episodic-blackboard on the real apiserver); bad keys and values are refused.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { kubectl, skipCluster } from '../support/cluster.ts';
import { clusterWithCrd, createNamespace } from '../support/kubelet.ts';
import { REPO, runCli, tempDir } from '../support/local.ts';

test('blackboard CLI locally: set, get one and all, del; a bad key or a huge value is a usage error', async () => {
  const dir = tempDir();
  assert.equal((await runCli(['blackboard', 'set', 'plan', 'v1', dir])).code, 0);
  assert.equal((await runCli(['blackboard', 'set', 'other', 'x', dir, '-n', 'team'])).code, 0);
  assert.equal((await runCli(['blackboard', 'get', 'plan', dir])).stdout, 'v1\n');
  // All keys: one argument is a key, so the state dir is named by option.
  const all = await runCli(['blackboard', 'get', '--state-dir', join(dir, '.episodic')]);
  assert.deepEqual(JSON.parse(all.stdout), { plan: 'v1' });
  const file = JSON.parse(readFileSync(join(dir, '.episodic', 'blackboard', 'default.json'), 'utf8'));
  assert.deepEqual(file.entries, { plan: 'v1' });
  assert.equal((await runCli(['blackboard', 'del', 'plan', dir])).code, 0);
  const gone = await runCli(['blackboard', 'get', 'plan', dir]);
  assert.equal(gone.code, 1);
  assert.match(gone.stderr, /no key plan in namespace default/);
  const bad = await runCli(['blackboard', 'set', '../x', 'v', dir]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /key must match/);
  const huge = await runCli(['blackboard', 'set', 'k', 'v'.repeat(5000), dir]);
  assert.equal(huge.code, 2);
  assert.match(huge.stderr, /longer than 4096 characters/);
});

test('blackboard CLI with --kubeconfig: the ConfigMap episodic-blackboard', { skip: skipCluster }, async () => {
  await clusterWithCrd();
  const ns = await createNamespace('bb-cli');
  const kubeconfig = join(REPO, '.cluster', 'kubeconfig');
  const set = await runCli(['blackboard', 'set', 'plan', 'v2', '-n', ns, '--kubeconfig', kubeconfig]);
  assert.equal(set.code, 0, set.stderr);
  assert.equal(
    await kubectl(['get', 'configmap', 'episodic-blackboard', '-n', ns, '-o', 'jsonpath={.data.plan}']),
    'v2',
  );
  const get = await runCli(['blackboard', 'get', 'plan', '-n', ns, '--kubeconfig', kubeconfig]);
  assert.equal(get.stdout, 'v2\n');
  assert.equal((await runCli(['blackboard', 'del', 'plan', '-n', ns, '--kubeconfig', kubeconfig])).code, 0);
  const all = await runCli(['blackboard', 'get', '-n', ns, '--kubeconfig', kubeconfig]);
  assert.deepEqual(JSON.parse(all.stdout), {});
});
