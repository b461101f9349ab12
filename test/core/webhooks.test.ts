// The webhook endpoint: HMAC-SHA256 in both forges' headers, checked in constant time; a missing or wrong
// signature is 401 and wakes nothing; a replayed delivery id is ignored; other events are not a wake.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import pino from 'pino';
import { startHookServer, validSignature } from '../../controller/sources/triggers/webhooks.ts';

test('validSignature: Gitea hex and GitHub sha256=hex; anything else is false', () => {
  const body = Buffer.from('{"action":"opened"}');
  const hex = createHmac('sha256', 's3cret').update(body).digest('hex');
  assert.equal(validSignature(body, 's3cret', hex), true);
  assert.equal(validSignature(body, 's3cret', `sha256=${hex}`), true);
  assert.equal(validSignature(body, 'other', hex), false);
  assert.equal(validSignature(Buffer.from('{"action":"closed"}'), 's3cret', hex), false);
  assert.equal(validSignature(body, 's3cret', hex.slice(2)), false, 'short');
  assert.equal(validSignature(body, 's3cret', undefined), false);
  assert.equal(validSignature(body, '', hex), false, 'no secret configured');
});

test('POST /hooks/NS/NAME: 401 unsigned, 202 and one wake per delivery id, 204 for other events, 404 unknown', async (t) => {
  const woken: string[] = [];
  const server = await startHookServer({
    address: '127.0.0.1:0',
    log: pino({ level: 'silent' }),
    target: {
      secret: async (_ns, name) => (name === 'fix' ? 'hook-secret' : undefined),
      wake: (ns, name) => woken.push(`${ns}/${name}`),
    },
  });
  t.after(() => server.close());
  const body = '{"action":"opened"}';
  const sign = (secret: string) => createHmac('sha256', secret).update(body).digest('hex');
  const post = (path: string, headers: Record<string, string>) =>
    fetch(`${server.url}${path}`, { method: 'POST', body, headers: { 'x-gitea-event': 'issues', ...headers } }).then(
      (r) => r.status,
    );
  assert.equal(await post('/hooks/default/fix', {}), 401);
  assert.equal(await post('/hooks/default/fix', { 'x-gitea-signature': sign('nope') }), 401);
  assert.deepEqual(woken, []);
  const signed = { 'x-gitea-signature': sign('hook-secret'), 'x-gitea-delivery': 'd-1' };
  assert.equal(await post('/hooks/default/fix', signed), 202);
  assert.equal(await post('/hooks/default/fix', signed), 202, 'a replay is answered');
  assert.deepEqual(woken, ['default/fix'], 'but wakes nothing');
  assert.equal(
    await post('/hooks/default/fix', { ...signed, 'x-gitea-delivery': 'd-2', 'x-gitea-event': 'push' }),
    204,
  );
  assert.equal(await post('/hooks/default/other', signed), 404);
  assert.equal(await post('/nowhere', signed), 404);
  assert.deepEqual(woken, ['default/fix']);
});
