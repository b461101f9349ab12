// Webhooks without a forge: signature tables for GitHub and Gitea, payloads normalised into ForgeItem (in the
// shapes GitHub documents for issues, issue_comment and pull_request), the replay log, and the HTTP handler.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type HookDelivery, type HookServer, startHookServer } from '../../controller/forge/hook-server.ts';
import { BODY_MAX, LABELS_MAX, TITLE_MAX } from '../../controller/forge/types.ts';
import { DeliveryLog, verifyWebhook, webhookItem } from '../../controller/forge/webhook.ts';

const SECRET = "It's a Secret to Everybody";
const user = (login: string, type = 'User') => ({ login, id: 1, type, site_admin: false });
const issue = (extra: Record<string, unknown> = {}) => ({
  id: 1,
  number: 7,
  title: 'Spelling error in the README file',
  body: 'It looks like you accidentally spelled commit with a single m.',
  user: user('octocat'),
  labels: [{ id: 208045946, name: 'bug', color: 'f29513', default: true }],
  state: 'open',
  html_url: 'https://github.com/octo/widgets/issues/7',
  created_at: '2026-11-25T10:00:00Z',
  updated_at: '2026-11-25T10:05:00Z',
  ...extra,
});
const comment = {
  id: 42,
  body: '/episodic go',
  user: user('maya'),
  created_at: '2026-11-25T10:06:00Z',
  updated_at: '2026-11-25T10:06:00Z',
  issue_url: 'https://api.github.com/repos/octo/widgets/issues/7',
};

function sign(secret: string, body: Buffer): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

describe('verifyWebhook', () => {
  const body = Buffer.from('Hello, World!');
  // GitHub's documented test vector for this secret and body.
  const githubVector = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
  const cases: Array<[string, 'github' | 'gitea', Record<string, string>, string, string | true]> = [
    ['github: the documented vector', 'github', { 'x-hub-signature-256': githubVector }, SECRET, true],
    [
      'github: another secret',
      'github',
      { 'x-hub-signature-256': `sha256=${sign('other', body)}` },
      SECRET,
      'bad signature',
    ],
    ['github: no signature', 'github', {}, SECRET, 'missing signature'],
    ['github: no prefix', 'github', { 'x-hub-signature-256': sign(SECRET, body) }, SECRET, 'bad signature'],
    [
      'github: sha1 header only',
      'github',
      { 'x-hub-signature': `sha1=${'0'.repeat(40)}` },
      SECRET,
      'missing signature',
    ],
    ['github: truncated', 'github', { 'x-hub-signature-256': githubVector.slice(0, -2) }, SECRET, 'bad signature'],
    ['github: empty secret', 'github', { 'x-hub-signature-256': githubVector }, '', 'no secret'],
    ['gitea: hex of the body', 'gitea', { 'x-gitea-signature': sign(SECRET, body) }, SECRET, true],
    ['gitea: upper-case hex', 'gitea', { 'x-gitea-signature': sign(SECRET, body).toUpperCase() }, SECRET, true],
    ['gitea: another secret', 'gitea', { 'x-gitea-signature': sign('other', body) }, SECRET, 'bad signature'],
    ['gitea: github header instead', 'gitea', { 'x-hub-signature-256': githubVector }, SECRET, 'missing signature'],
    ['gitea: not hex', 'gitea', { 'x-gitea-signature': 'z'.repeat(64) }, SECRET, 'bad signature'],
  ];
  for (const [name, forge, signature, secret, expected] of cases) {
    it(name, () => {
      const delivery = forge === 'github' ? 'x-github-delivery' : 'x-gitea-delivery';
      const verdict = verifyWebhook(
        forge,
        { ...signature, [delivery]: 'd-1', [`x-${forge}-event`]: 'issues' },
        body,
        secret,
      );
      assert.deepEqual(
        verdict,
        expected === true ? { ok: true, event: 'issues', deliveryId: 'd-1' } : { ok: false, reason: expected },
      );
    });
  }

  it('rejects a body changed by one byte and a signed delivery without an id', () => {
    const sig = { 'x-hub-signature-256': `sha256=${sign(SECRET, body)}`, 'x-github-delivery': 'd' };
    assert.deepEqual(verifyWebhook('github', sig, Buffer.from('Hello, World?'), SECRET), {
      ok: false,
      reason: 'bad signature',
    });
    const noId = { 'x-hub-signature-256': sig['x-hub-signature-256'] };
    assert.deepEqual(verifyWebhook('github', noId, body, SECRET), { ok: false, reason: 'missing delivery id' });
  });
});

describe('webhookItem', () => {
  it('normalises issues, issue_comment (on a PR) and pull_request events into items', () => {
    const opened = webhookItem('github', 'issues', { action: 'opened', issue: issue(), sender: user('octocat') });
    assert.deepEqual(opened, {
      kind: 'item',
      action: 'opened',
      item: {
        number: 7,
        title: 'Spelling error in the README file',
        body: 'It looks like you accidentally spelled commit with a single m.',
        url: 'https://github.com/octo/widgets/issues/7',
        author: 'octocat',
        authorIsBot: false,
        labels: ['bug'],
        open: true,
        isPullRequest: false,
        updatedAt: '2026-11-25T10:05:00Z',
      },
    });
    const onPull = webhookItem('github', 'issue_comment', {
      action: 'created',
      issue: issue({ pull_request: { url: 'x' } }),
      comment,
    });
    assert.equal(onPull.kind === 'item' && onPull.item.isPullRequest, true);
    assert.deepEqual(onPull.kind === 'item' && onPull.comment, {
      id: 42,
      itemNumber: 7,
      author: 'maya',
      authorIsBot: false,
      body: '/episodic go',
      createdAt: '2026-11-25T10:06:00Z',
      updatedAt: '2026-11-25T10:06:00Z',
    });
    const pull = webhookItem('gitea', 'pull_request', {
      action: 'opened',
      number: 8,
      pull_request: {
        ...issue({ number: 8 }),
        head: { ref: 'feature/x', sha: 'abc' },
        user: user('dependabot[bot]', 'Bot'),
      },
    });
    assert.deepEqual(
      pull.kind === 'item' && [pull.item.number, pull.item.isPullRequest, pull.item.headBranch, pull.item.authorIsBot],
      [8, true, 'feature/x', true],
    );
  });

  it('ignores other events and deleted comments; flags payloads without the item', () => {
    assert.equal(webhookItem('github', 'ping', { zen: 'Keep it logically awesome.', hook_id: 1 }).kind, 'ignored');
    assert.equal(
      webhookItem('github', 'issue_comment', { action: 'deleted', issue: issue(), comment }).kind,
      'ignored',
    );
    assert.equal(webhookItem('github', 'issues', { action: 'opened', issue: { title: 'no number' } }).kind, 'invalid');
    assert.equal(webhookItem('github', 'issues', 'not an object').kind, 'invalid');
  });

  it('bounds untrusted text: title, body, label names and count', () => {
    const huge = issue({
      title: 't'.repeat(10_000),
      body: 'b'.repeat(1_000_000),
      labels: Array.from({ length: 500 }, (_, i) => ({ name: `l${i}${'x'.repeat(500)}` })),
    });
    const found = webhookItem('github', 'issues', { action: 'edited', issue: huge });
    assert.ok(found.kind === 'item');
    assert.equal(found.item.title.length, TITLE_MAX);
    assert.equal(found.item.body.length, BODY_MAX);
    assert.equal(found.item.labels.length, LABELS_MAX);
    assert.ok(found.item.labels.every((l) => l.length <= 100));
  });
});

describe('DeliveryLog', () => {
  it('remembers the newest ids up to its bound, per forge', () => {
    const log = new DeliveryLog(2);
    log.add('github', 'a');
    log.add('github', 'b');
    assert.equal(log.has('github', 'a'), true); // refreshed: b is now the oldest
    log.add('github', 'c');
    assert.deepEqual(
      [log.has('github', 'a'), log.has('github', 'b'), log.has('github', 'c'), log.has('gitea', 'a')],
      [true, false, true, false],
    );
    assert.equal(log.size, 2);
  });
});

describe('POST /hooks/NAMESPACE/TRIGGER', () => {
  let server: HookServer;
  const items: HookDelivery[] = [];
  let failNext = false;

  before(async () => {
    server = await startHookServer({
      resolve: (ns, trigger) => {
        if (ns !== 'team-a') return undefined;
        if (trigger === 'gitea-issues') return { forge: 'gitea', secret: SECRET };
        return trigger === 'issues' ? { forge: 'github', secret: SECRET } : undefined;
      },
      onItem: (d) => {
        if (failNext) {
          failNext = false;
          throw new Error('the loop is busy');
        }
        items.push(d);
      },
      maxBodyBytes: 64 * 1024,
    });
  });
  after(async () => {
    await server?.close();
  });

  const post = async (
    body: string,
    headers: Record<string, string>,
    path = '/hooks/team-a/issues',
    method = 'POST',
  ) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: method === 'GET' ? undefined : body,
    });
    return [res.status, (await res.text()).trim()];
  };
  const signed = (body: string, id: string, event = 'issues') => ({
    'x-hub-signature-256': `sha256=${sign(SECRET, Buffer.from(body))}`,
    'x-github-delivery': id,
    'x-github-event': event,
  });
  const payload = JSON.stringify({ action: 'labeled', issue: issue() });

  it('accepts a signed delivery once; a replay, a bad or missing signature change nothing', async () => {
    assert.deepEqual(await post(payload, signed(payload, 'id-1')), [202, 'accepted']);
    assert.deepEqual(await post(payload, signed(payload, 'id-1')), [202, 'replayed delivery ignored']);
    const forged = {
      ...signed(payload, 'id-2'),
      'x-hub-signature-256': `sha256=${sign('guess', Buffer.from(payload))}`,
    };
    assert.deepEqual(await post(payload, forged), [401, 'bad signature']);
    const { 'x-hub-signature-256': _, ...unsigned } = signed(payload, 'id-3');
    assert.deepEqual(await post(payload, unsigned), [401, 'missing signature']);
    assert.deepEqual(
      items.map((d) => [d.namespace, d.trigger, d.deliveryId, d.action, d.item.number]),
      [['team-a', 'issues', 'id-1', 'labeled', 7]],
    );
  });

  it('does the same for Gitea: its own headers, a replay ignored, a GitHub signature refused', async () => {
    const body = JSON.stringify({ action: 'opened', number: 11, issue: issue({ number: 11 }) });
    const headers = {
      'x-gitea-signature': sign(SECRET, Buffer.from(body)),
      'x-gitea-delivery': 'g-1',
      'x-gitea-event': 'issues',
    };
    const path = '/hooks/team-a/gitea-issues';
    assert.deepEqual(await post(body, headers, path), [202, 'accepted']);
    assert.deepEqual(await post(body, headers, path), [202, 'replayed delivery ignored']);
    assert.deepEqual(await post(body, signed(body, 'g-2'), path), [401, 'missing signature']);
    assert.deepEqual(await post(body, { ...headers, 'x-gitea-signature': sign('nope', Buffer.from(body)) }, path), [
      401,
      'bad signature',
    ]);
    assert.deepEqual(items.map((d) => [d.forge, d.item.number]).slice(-1), [['gitea', 11]]);
    items.pop();
  });

  it('answers 404, 405, 413 and 400 for the wrong path, method, size and body', async () => {
    assert.deepEqual(await post(payload, signed(payload, 'x1'), '/hooks/team-a/other'), [
      404,
      'no such webhook trigger',
    ]);
    assert.deepEqual(await post(payload, signed(payload, 'x2'), '/hooks/Team_A/../issues'), [404, 'not a hook']);
    assert.deepEqual(await post('', {}, '/hooks/team-a/issues', 'GET'), [405, 'POST only']);
    const big = JSON.stringify({ action: 'opened', issue: issue({ body: 'b'.repeat(100_000) }) });
    assert.deepEqual(await post(big, signed(big, 'x3')), [413, 'body too large']);
    assert.deepEqual(await post('{nope', signed('{nope', 'x4')), [400, 'body is not JSON']);
    assert.deepEqual(await post('{}', signed('{}', 'x5', 'ping')), [202, 'event ping is not one triggers use']);
    assert.deepEqual(await post('{}', signed('{}', 'x6')), [
      400,
      'github issues: issue: Invalid input: expected object, received undefined',
    ]);
    assert.equal(items.length, 1);
  });

  it('answers 500 when the callback fails and accepts the forge redelivering the same id', async () => {
    failNext = true;
    const body = JSON.stringify({ action: 'opened', issue: issue({ number: 9 }) });
    assert.equal((await post(body, signed(body, 'retry-1')))[0], 500);
    assert.deepEqual(await post(body, signed(body, 'retry-1')), [202, 'accepted']);
    assert.deepEqual(
      items.map((d) => d.item.number),
      [7, 9],
    );
  });
});
