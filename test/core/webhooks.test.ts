// POST /hooks/NAMESPACE/TRIGGER as both modes serve it (sources/triggers/trigger-hooks.ts over
// forge/hook-server.ts). A forge source's `webhook:` only wakes its poll: 401 unsigned or wrongly signed and
// nothing woken, one wake per delivery id, other events wake nothing. A `source.webhook` trigger judges the
// delivered item like a poll result through the real local created-tasks store: a labelled issue → one task
// with the deterministic name; a replay, a second delivery for the same item, a bad signature, an unlabelled
// item, an excluded author or another repository → nothing more; a command comment counts only from a user
// with the permission (asked of a stand-in Gitea answering its collaborator-permission API).
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { Registry } from 'prom-client';
import { AgentTriggerSpecSchema, validateTriggerSpec } from '../../controller/api/agent-trigger.ts';
import { ManualClock } from '../../controller/core/clock.ts';
import type { HookServer } from '../../controller/forge/hook-server.ts';
import { TriggerMetrics } from '../../controller/metrics/trigger-metrics.ts';
import { LocalCreatedTasks } from '../../controller/sources/local/created-tasks.ts';
import { LocalTriggerStatus } from '../../controller/sources/triggers/local-triggers.ts';
import { hookAddress, serveTriggerHooks } from '../../controller/sources/triggers/trigger-hooks.ts';
import type { RunnableTrigger } from '../../controller/sources/triggers/trigger-runner.ts';
import { TriggerRunner } from '../../controller/sources/triggers/trigger-runner.ts';
import { tempDir } from '../support/local.ts';

const SECRET = 'hook-secret';
const template = {
  spec: { prompt: 'Fix #{{item.number}} {{item.title}} {{item.comment}}', agent: { command: ['a'] } },
};

function runnable(name: string, source: object): RunnableTrigger {
  const spec = AgentTriggerSpecSchema.parse({ source, template, maxConcurrency: 10 });
  return {
    key: `default/${name}`,
    namespace: 'default',
    name,
    spec,
    owner: { kind: 'AgentTrigger', namespace: 'default', name },
  };
}

function issue(number: number, over: Record<string, unknown> = {}) {
  return {
    number,
    title: `Issue ${number}`,
    body: 'b',
    html_url: `http://gitea/o/r/issues/${number}`,
    state: 'open',
    user: { login: 'alice' },
    labels: [{ name: 'agent' }],
    ...over,
  };
}

describe('POST /hooks/NAMESPACE/TRIGGER', () => {
  const stateDir = join(tempDir(), '.episodic');
  const created = new LocalCreatedTasks({ stateDir });
  const status = new LocalTriggerStatus(stateDir);
  const woken: string[] = [];
  const permissionsAsked: string[] = [];
  let forge: http.Server;
  let server: HookServer;
  const triggers = new Map<string, RunnableTrigger>();
  const metrics = new TriggerMetrics(new Registry());

  before(async () => {
    forge = http.createServer((req, res) => {
      const user = /\/collaborators\/([^/]+)\/permission$/.exec(req.url ?? '')?.[1] ?? '';
      permissionsAsked.push(user);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ permission: user === 'alice' ? 'write' : 'read' }));
    });
    await new Promise<void>((r) => forge.listen(0, '127.0.0.1', r));
    const apiURL = `http://127.0.0.1:${(forge.address() as AddressInfo).port}`;
    for (const t of [
      runnable('polled', { gitea: { apiURL, repo: 'o/r', webhook: { secretEnv: 'S' } } }),
      runnable('fix', {
        webhook: { forge: 'gitea', repo: 'o/r', labels: ['agent'], excludeAuthors: ['mallory'], secretEnv: 'S' },
      }),
      runnable('gh', { webhook: { forge: 'github', repo: 'o/r', labels: ['agent'], secretEnv: 'S' } }),
      runnable('paused', {
        webhook: { forge: 'gitea', labels: ['agent'], secretEnv: 'S' },
      }),
      runnable('ask', {
        webhook: {
          forge: 'gitea',
          repo: 'o/r',
          command: { text: '/episodic', minPermission: 'write' },
          secretEnv: 'S',
          apiURL,
          tokenEnv: 'T',
        },
      }),
    ])
      triggers.set(t.key, t);
    const runner = new TriggerRunner({
      created,
      finished: () => false,
      status,
      clock: new ManualClock(new Date('2026-01-01T00:00:00Z')),
      secret: async (s) => (s.tokenEnv === 'S' ? SECRET : s.tokenEnv === 'T' ? 'api-token' : undefined),
      logger: pino({ level: 'silent' }),
    });
    server = await serveTriggerHooks('127.0.0.1:0', {
      trigger: (key) => triggers.get(key),
      wake: (key) => woken.push(key),
      runner,
      secret: async (s) => (s.tokenEnv === 'S' ? SECRET : s.tokenEnv === 'T' ? 'api-token' : undefined),
      counters: metrics,
      log: pino({ level: 'silent' }),
    });
  });
  after(async () => {
    await server?.close();
    forge?.close();
  });

  let ids = 0;
  const post = async (path: string, payload: object, opts: { event?: string; secret?: string; id?: string } = {}) => {
    const body = JSON.stringify(payload);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-gitea-event': opts.event ?? 'issues',
      'x-gitea-delivery': opts.id ?? `d-${++ids}`,
    };
    if (opts.secret !== '') {
      headers['x-gitea-signature'] = createHmac('sha256', opts.secret ?? SECRET)
        .update(body)
        .digest('hex');
    }
    const res = await fetch(`${server.url}${path}`, { method: 'POST', body, headers });
    return [res.status, (await res.text()).trim()];
  };
  const owner = (name: string) => runnable(name, { schedule: { cron: '0 0 * * *' } }).owner;
  const tasks = async (name: string) => (await created.list(owner(name))).map((t) => t.name).sort();
  const repository = { full_name: 'o/r' };

  it('a forge source: 401 unsigned or wrongly signed, one wake per delivery id, other events wake nothing', async () => {
    const payload = { action: 'opened', issue: issue(1), repository };
    assert.deepEqual(await post('/hooks/default/polled', payload, { secret: '' }), [401, 'missing signature']);
    assert.deepEqual(await post('/hooks/default/polled', payload, { secret: 'nope' }), [401, 'bad signature']);
    assert.deepEqual(woken, []);
    assert.deepEqual(await post('/hooks/default/polled', payload, { id: 'w-1' }), [202, 'accepted']);
    assert.deepEqual(await post('/hooks/default/polled', payload, { id: 'w-1' }), [202, 'replayed delivery ignored']);
    assert.deepEqual(await post('/hooks/default/polled', {}, { event: 'push' }), [
      202,
      'event push is not one triggers use',
    ]);
    assert.deepEqual(await post('/hooks/default/other', payload), [404, 'no such webhook trigger']);
    assert.deepEqual(woken, ['default/polled']);
    assert.deepEqual(await tasks('polled'), [], 'a wake creates nothing by itself');
  });

  it('source.webhook: a labelled issue becomes one task; replays and repeats, bad signatures and misses do not', async () => {
    const opened = { action: 'opened', issue: issue(7), repository };
    assert.deepEqual(await post('/hooks/default/fix', opened, { secret: 'guess' }), [401, 'bad signature']);
    assert.deepEqual(await tasks('fix'), []);
    assert.deepEqual(await post('/hooks/default/fix', opened, { id: 'x-1' }), [202, 'accepted']);
    assert.deepEqual(await tasks('fix'), ['fix-7']);
    const [task] = await created.list(owner('fix'));
    assert.equal(task.labels['episodic.dev/trigger'], 'fix');
    assert.equal(task.labels['episodic.dev/trigger-item'], '7');
    assert.deepEqual(await post('/hooks/default/fix', opened, { id: 'x-1' }), [202, 'replayed delivery ignored']);
    // The same item again under a new delivery id (an edit, a label event): the name is taken, nothing new.
    assert.deepEqual(await post('/hooks/default/fix', { ...opened, action: 'edited' }), [202, 'accepted']);
    for (const missed of [
      issue(8, { labels: [] }),
      issue(9, { user: { login: 'mallory' } }),
      issue(10, { user: { login: 'ci', type: 'Bot' } }),
      issue(11, { state: 'closed' }),
    ])
      assert.deepEqual(await post('/hooks/default/fix', { action: 'opened', issue: missed, repository }), [
        202,
        'accepted',
      ]);
    const elsewhere = { action: 'opened', issue: issue(12), repository: { full_name: 'o/elsewhere' } };
    assert.deepEqual(await post('/hooks/default/fix', elsewhere), [202, 'accepted']);
    assert.deepEqual(await tasks('fix'), ['fix-7']);
    const pull = { action: 'labeled', pull_request: issue(13), repository };
    assert.deepEqual(await post('/hooks/default/fix', pull, { event: 'pull_request' }), [202, 'accepted']);
    assert.deepEqual(await tasks('fix'), ['fix-13', 'fix-7'], 'pull_request events too');
    const paused = triggers.get('default/paused');
    if (paused) paused.spec.suspend = true;
    assert.deepEqual(await post('/hooks/default/paused', opened), [202, 'accepted']);
    assert.deepEqual(await tasks('paused'), [], 'a suspended trigger creates nothing');
    const s = status.read('default/fix');
    assert.equal(s?.tasksCreated, 2);
    assert.equal(s?.tasksActive, 2);
  });

  it('episodic_webhook_deliveries_total counts each answer by forge and result, never an unknown trigger', async () => {
    const count = async (forge: string, result: string) => {
      const { values } = await metrics.webhookDeliveries.get();
      return values.find((v) => v.labels.forge === forge && v.labels.result === result)?.value ?? 0;
    };
    const results = ['accepted', 'bad_signature', 'replayed', 'not_found'];
    const before = await Promise.all(results.map((r) => count(r === 'not_found' ? 'unknown' : 'gitea', r)));
    const opened = { action: 'opened', issue: issue(40), repository };
    assert.deepEqual(await post('/hooks/default/fix', opened, { id: 'm-1' }), [202, 'accepted']);
    assert.deepEqual(await post('/hooks/default/fix', opened, { secret: 'guess' }), [401, 'bad signature']);
    assert.deepEqual(await post('/hooks/default/fix', opened, { id: 'm-1' }), [202, 'replayed delivery ignored']);
    assert.deepEqual(await post('/hooks/default/no-such-trigger', opened), [404, 'no such webhook trigger']);
    const after = await Promise.all(results.map((r) => count(r === 'not_found' ? 'unknown' : 'gitea', r)));
    assert.deepEqual(
      after.map((n, i) => n - before[i]),
      [1, 1, 1, 1],
    );
    const { values } = await metrics.webhookDeliveries.get();
    assert.ok(!JSON.stringify(values).includes('no-such-trigger'), 'a name from the URL is never a label');
  });

  it('source.webhook from GitHub: its headers (X-Hub-Signature-256: sha256=…); a Gitea signature is refused', async () => {
    const body = JSON.stringify({ action: 'labeled', issue: issue(30), repository });
    const hub = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
    const send = (headers: Record<string, string>) =>
      fetch(`${server.url}/hooks/default/gh`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'x-github-event': 'issues', ...headers },
      }).then(async (r) => [r.status, (await r.text()).trim()]);
    const gitea = createHmac('sha256', SECRET).update(body).digest('hex');
    assert.deepEqual(await send({ 'x-gitea-signature': gitea, 'x-github-delivery': 'g-1' }), [
      401,
      'missing signature',
    ]);
    assert.deepEqual(await tasks('gh'), []);
    assert.deepEqual(await send({ 'x-hub-signature-256': hub, 'x-github-delivery': 'g-2' }), [202, 'accepted']);
    assert.deepEqual(await tasks('gh'), ['gh-30']);
  });

  it('source.webhook with a command: only a comment from a user with the permission creates a task', async () => {
    const comment = (id: number, login: string, body: string) => ({
      action: 'created',
      issue: issue(20, { labels: [] }),
      comment: { id, body, user: { login } },
      repository,
    });
    await post('/hooks/default/ask', comment(1, 'reader', '/episodic please'), { event: 'issue_comment' });
    await post('/hooks/default/ask', comment(2, 'alice', 'just chatting'), { event: 'issue_comment' });
    assert.deepEqual(await tasks('ask'), []);
    assert.deepEqual(permissionsAsked, ['reader'], 'asked only for a command');
    assert.deepEqual(
      await post('/hooks/default/ask', comment(3, 'alice', '/episodic go'), { event: 'issue_comment' }),
      [202, 'accepted'],
    );
    assert.deepEqual(await tasks('ask'), ['ask-20']);
    const [task] = await created.list(owner('ask'));
    assert.match(JSON.stringify(task), /\/episodic go/);
  });
});

it('a webhook source needs a secret, and a command needs what the permission check asks', () => {
  const check = (webhook: object) => {
    const v = validateTriggerSpec({ source: { webhook }, template });
    return v.ok ? [] : v.errors;
  };
  assert.deepEqual(check({ forge: 'github', secretEnv: 'S' }), []);
  assert.match(check({ forge: 'github' }).join('\n'), /needs secretEnv \(local\) or secretRef \(cluster\)/);
  assert.match(
    check({ forge: 'gitea', secretEnv: 'S', command: {} }).join('\n'),
    /checking a commenter's permission needs repo, tokenEnv or tokenSecretRef, apiURL/,
  );
});

it('a bare port binds the loopback', () => {
  assert.deepEqual(hookAddress('8090'), { host: '127.0.0.1', port: 8090 });
  assert.deepEqual(hookAddress(':8090'), { host: '127.0.0.1', port: 8090 });
  assert.deepEqual(hookAddress('0.0.0.0:8090'), { host: '0.0.0.0', port: 8090 });
});
