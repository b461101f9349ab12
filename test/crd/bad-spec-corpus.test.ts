// The bad-spec corpus (test/support/bad-specs.ts) against the real apiserver: every case the CRD can express
// (wrong types, unknown fields, objects replaced by scalars, names no label can carry, negative counts) is
// refused with strict field validation, as `kubectl apply` sends it — the same verdict as `episodic validate`.
// What only a local run can know (DIR, other files) and null (the apiserver's "unset") are not asked.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { badSpecCorpus, fullSpec, taskObject } from '../support/bad-specs.ts';
import { skipCluster } from '../support/cluster.ts';
import { clusterWithCrd, testClient } from '../support/kubelet.ts';

describe('bad-spec corpus on the real apiserver', { skip: skipCluster }, () => {
  let client: KubeClient;
  const path = '/apis/episodic.dev/v1alpha1/namespaces/default/agenttasks';
  const create = (body: unknown) =>
    client.request('POST', path, { body, query: { dryRun: 'All', fieldValidation: 'Strict' } });

  before(async () => {
    client = await testClient(await clusterWithCrd());
  });
  after(() => client?.close());

  it('the full valid spec is accepted (so each refusal is the case, not the base)', async () => {
    await create(taskObject('corpus-valid', fullSpec()));
  });

  it('every case the CRD can express is refused, naming its field', async () => {
    const cases = badSpecCorpus().filter((c) => c.crd && c.object);
    assert.ok(cases.length >= 90, `${cases.length} cases`);
    const accepted: string[] = [];
    const unnamed: string[] = [];
    for (const c of cases) {
      const err = await create(c.object).then(
        () => undefined,
        (e: Error) => e,
      );
      if (!err) accepted.push(`${c.file} (${c.field})`);
      else if (!err.message.includes(c.field!.replace(/^metadata\.name$/, 'name')))
        unnamed.push(`${c.file} (${c.field}): ${err.message.slice(0, 300)}`);
    }
    assert.deepEqual(accepted, [], 'the apiserver accepted what episodic validate refuses');
    assert.deepEqual(unnamed, [], 'refusals that do not name the field');
  });
});
