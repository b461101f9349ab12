// Smoke test of the real control plane (kube-apiserver + etcd) used by the
// cluster tests: everything here goes through the real kubectl binary.
//
// Run: node --test test/cluster/control-plane.test.ts
// The first run on a fresh machine builds kube-apiserver (see
// docs/cluster-for-tests.md). Set EPISODIC_SKIP_CLUSTER=1 to skip.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ensureCluster, kubectl, repoRoot, skipCluster } from '../support/cluster.ts';
import type { Cluster } from '../support/cluster.ts';

const skip = skipCluster;

describe('test control plane', { skip }, () => {
  let cluster: Cluster;
  // Unique per run: the cluster is shared and long-lived, and without
  // kube-controller-manager a deleted namespace stays Terminating forever,
  // so names must never be reused.
  const ns = `cp-test-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;

  before(
    async () => {
      cluster = await ensureCluster();
    },
    { timeout: 90 * 60_000 },
  );

  after(async () => {
    if (cluster) await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  });

  it('serves the pinned kube-apiserver version', async () => {
    const pinned = (
      await promisify(execFile)('bash', [path.join(repoRoot, 'scripts/cluster/build-apiserver.sh'), '--version'])
    ).stdout.trim();
    assert.match(pinned, /^v1\.\d+\.\d+$/);
    assert.equal(cluster.kubeVersion, pinned);

    const version = JSON.parse(await kubectl(['version', '--output=json']));
    assert.equal(version.serverVersion.gitVersion, pinned);
    assert.equal(version.serverVersion.major, '1');
    assert.equal(version.serverVersion.minor, pinned.split('.')[1]);
  });

  it('grants the admin token cluster-admin', async () => {
    assert.equal((await kubectl(['auth', 'can-i', '*', '*'])).trim(), 'yes');
  });

  it('creates a namespace and a ConfigMap and reads it back', async () => {
    await kubectl(['create', 'namespace', ns]);
    const nsObj = JSON.parse(await kubectl(['get', 'namespace', ns, '-o', 'json']));
    assert.equal(nsObj.status.phase, 'Active');

    await kubectl(['apply', '-n', ns, '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'greeting', labels: { app: 'episodic-test' } },
        data: { hello: 'world', n: '42' },
      }),
    });

    const cm = JSON.parse(await kubectl(['get', 'configmap', 'greeting', '-n', ns, '-o', 'json']));
    assert.deepEqual(cm.data, { hello: 'world', n: '42' });
    assert.equal(cm.metadata.labels.app, 'episodic-test');
    assert.ok(cm.metadata.uid, 'stored object has a uid');
    assert.ok(cm.metadata.resourceVersion, 'stored object has a resourceVersion');

    const listed = await kubectl(['get', 'configmaps', '-n', ns, '-l', 'app=episodic-test', '-o', 'name']);
    assert.equal(listed.trim(), 'configmap/greeting');
  });
});
