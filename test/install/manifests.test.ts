// manifests/ (the kustomize install) is generated from the chart: checked-in files must be current, and
// `kubectl kustomize` must build the same objects the chart renders. The server-side apply against the
// real kube-apiserver is in install.test.ts (it shares cluster-wide names with the helm install there).
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { generateManifests, staleManifests } from '../../scripts/gen-manifests.ts';
import { kubectlPath, run } from '../support/cluster.ts';
import { NAMESPACE, helmCmd, parseObjects, render, repoRoot } from './support.ts';

describe('kustomize manifests/', () => {
  it('are current with the chart (node scripts/gen-manifests.ts)', async () => {
    const problems = await staleManifests();
    assert.deepEqual(
      problems,
      [],
      `manifests/ is stale; run \`node scripts/gen-manifests.ts\`:\n  ${problems.join('\n  ')}`,
    );
  });

  it('build (kubectl kustomize) into the chart objects plus the Namespace and the CRDs', async () => {
    await helmCmd(['version']); // makes sure .cluster/bin is populated (scripts/cluster/tools.sh)
    const built = parseObjects(await run(kubectlPath, ['kustomize', path.join(repoRoot, 'manifests')]));
    const chart = await render({}, ['--include-crds']);
    const key = (o: { kind: string; metadata: { name: string; namespace?: string } }) =>
      `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    assert.deepEqual(built.map(key).sort(), [...chart.map(key), `Namespace//${NAMESPACE}`].sort());
    const stripLabels = (o: any) => {
      const copy = structuredClone(o);
      delete copy.metadata.labels?.['helm.sh/chart'];
      delete copy.metadata.labels?.['app.kubernetes.io/managed-by'];
      return copy;
    };
    for (const o of chart) {
      const twin = built.find((b) => key(b) === key(o));
      assert.deepEqual(stripLabels(twin), stripLabels(o), key(o));
    }
    for (const o of built.filter((b) => b.kind !== 'CustomResourceDefinition' && b.kind !== 'Namespace')) {
      assert.equal(o.metadata.labels?.['app.kubernetes.io/managed-by'], 'kustomize', key(o));
      assert.equal(o.metadata.labels?.['helm.sh/chart'], undefined, key(o));
    }
  });

  it('examples/triggers/kustomize-hooks builds what the chart renders with hooks.enabled and rbac.readSecrets', async () => {
    await helmCmd(['version']);
    const overlay = path.join(repoRoot, 'examples', 'triggers', 'kustomize-hooks');
    const built = parseObjects(await run(kubectlPath, ['kustomize', overlay]));
    const chart = await render({ 'hooks.enabled': true, 'rbac.readSecrets': true });
    const pick = (objects: any[], kind: string, name: string) =>
      objects.find((o) => o.kind === kind && o.metadata.name === name);
    assert.deepEqual(pick(built, 'Service', 'episodic-hooks').spec, pick(chart, 'Service', 'episodic-hooks').spec);
    const container = (objects: any[]) => pick(objects, 'Deployment', 'episodic').spec.template.spec.containers[0];
    assert.deepEqual(container(built).args, container(chart).args);
    assert.ok(container(built).args.includes('--hooks-addr=0.0.0.0:8092'));
    assert.deepEqual(container(built).ports, container(chart).ports);
    const rules = (objects: any[]) =>
      pick(objects, 'ClusterRole', 'episodic')
        .rules.map((r: object) => JSON.stringify(r))
        .sort();
    assert.deepEqual(rules(built), rules(chart));
  });

  it('generation is deterministic', async () => {
    const a = await generateManifests();
    const b = await generateManifests();
    assert.deepEqual([...a.entries()], [...b.entries()]);
  });
});
