// The AgentTrigger CRD: structural, accepted by a real kube-apiserver, which fills zod's defaults and
// refuses a name too long to prefix its tasks' names.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { API_VERSION } from '../../controller/api/agent-task.ts';
import { TRIGGER_KIND, TRIGGER_NAME_MAX } from '../../controller/api/agent-trigger.ts';
import { TRIGGER_CRD_FILE, TRIGGER_CRD_NAME } from '../../controller/api/crd.ts';
import { ensureCluster, kubectl, repoRoot, skipCluster } from '../support/cluster.ts';

describe('AgentTrigger CRD on a real kube-apiserver', { skip: skipCluster }, () => {
  const ns = `trigger-crd-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  let ready = false;
  const trigger = (name: string) => ({
    apiVersion: API_VERSION,
    kind: TRIGGER_KIND,
    metadata: { name },
    spec: {
      source: { schedule: { cron: '0 3 * * *', timeZone: 'Europe/Berlin' } },
      template: { spec: { prompt: 'Tick {{tick}}', agent: { command: ['agent'], image: 'example/agent:1' } } },
    },
  });
  const apply = (obj: object) => kubectl(['apply', '-n', ns, '-f', '-'], { input: JSON.stringify(obj) });

  before(
    async () => {
      await ensureCluster();
      ready = true;
      await kubectl(['apply', '--server-side', '--force-conflicts', '-f', path.join(repoRoot, TRIGGER_CRD_FILE)]);
      await kubectl(['wait', '--for=condition=Established', '--timeout=60s', `crd/${TRIGGER_CRD_NAME}`]);
      await kubectl(['create', 'namespace', ns]);
    },
    { timeout: 10 * 60_000 },
  );

  after(async () => {
    if (!ready) return;
    await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  });

  it('stores a trigger with the defaults zod fills', async () => {
    await apply(trigger('nightly'));
    const stored = JSON.parse(await kubectl(['get', 'agenttrigger', 'nightly', '-n', ns, '-o', 'json']));
    assert.equal(stored.spec.source.schedule.concurrencyPolicy, 'Forbid');
    assert.equal(stored.spec.source.schedule.historyLimit, 10);
    assert.equal(stored.spec.maxConcurrency, 1);
    assert.equal(stored.spec.template.spec.limits.maxEpisodes, 20);
  });

  it('refuses a name too long to prefix its tasks, saying why', async () => {
    const err = await apply(trigger('t'.repeat(TRIGGER_NAME_MAX + 1))).then(
      () => undefined,
      (e: Error) => e,
    );
    assert.ok(err, 'accepted');
    assert.match(err.message, new RegExp(`at most ${TRIGGER_NAME_MAX} characters for an AgentTrigger`));
  });
});
