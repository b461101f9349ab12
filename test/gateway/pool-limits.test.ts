// A credential's own per-minute limits (spec.credentials[].limits) behind the real gateway, decided on the
// injected clock: a request the limits do not allow now waits on that clock for the minute to move on, and
// goes out the moment it does. Nothing is forwarded before: time moves only when the test advances it.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { validateCredentialsSpec } from '../../controller/api/agent-credentials.ts';
import { ManualClock } from '../../controller/core/clock.ts';
import { LocalGatewayBinding } from '../../controller/executors/local/gateway-binding.ts';
import type { OpenedGrant } from '../../controller/executors/local/gateway-binding.ts';
import type { SpecCredentials } from '../../controller/sources/local/credentials-files.ts';
import { startModelServer } from '../model-server/server.ts';
import type { ModelServer } from '../model-server/server.ts';

const KEY_A = 'sk-ant-api03-limits-key-A-NEVER-SHOWN-1111';
const KEY_B = 'sk-ant-api03-limits-key-B-NEVER-SHOWN-2222';
const env = { LIMITS_KEY_A: KEY_A, LIMITS_KEY_B: KEY_B };
const PRICE = { inputPerMTok: 3, outputPerMTok: 20, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };

function doc(name: string, upstream: string, credentials: unknown[]): SpecCredentials {
  const v = validateCredentialsSpec({ provider: 'anthropic', upstream, credentials, pricing: { '*': PRICE } });
  assert.ok(v.ok, v.ok ? '' : JSON.stringify(v));
  return {
    key: `default/${name}`,
    namespace: 'default',
    name,
    file: 'c.yaml',
    spec: v.spec,
    errors: [],
    specHash: 'h',
  };
}

async function ask(grant: OpenedGrant): Promise<{ status: number; body: string }> {
  const res = await fetch(`${grant.env.ANTHROPIC_BASE_URL}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': grant.env.ANTHROPIC_API_KEY },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [] }),
  });
  return { status: res.status, body: await res.text() };
}

describe("a credential's per-minute limits, on the injected clock", () => {
  let server: ModelServer;
  let binding: LocalGatewayBinding;
  let stateDir: string;
  const clock = new ManualClock(new Date('2026-06-01T12:00:00Z'));
  const docs: SpecCredentials[] = [];
  let episode = 0;
  const open = async (credentials: string): Promise<OpenedGrant> => {
    const g = await binding.open({
      namespace: 'default',
      task: `t${episode}`,
      episode: ++episode,
      credentials,
      leash: { task: { costUSD: 0, tokens: 0 }, others: [] },
      onRefused: () => {},
    });
    assert.ok(g.ok, g.ok ? '' : g.message);
    return g;
  };
  const sent = (tag: string) => server.requestsFor(tag).map((r) => r.credential);
  /** The event a held request makes: the gateway arms a timer on the clock. */
  const timerArmed = async () => {
    for (let i = 0; i < 2000 && clock.pending().length === 0; i++) await delay(5);
    return clock.pending();
  };

  before(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'pool-limits-'));
    server = await startModelServer({ now: () => Math.floor(clock.now().getTime() / 1000) });
    binding = new LocalGatewayBinding({ lookup: () => docs, log: pino({ level: 'silent' }), stateDir, env, clock });
  });
  after(async () => {
    await binding?.close();
    await server?.close();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('requestsPerMinute: one a minute on each of two; the third request waits for the minute, then goes', async () => {
    docs.splice(
      0,
      docs.length,
      doc('rpm', `${server.url}/s/ok.rpm`, [
        { name: 'key-a', env: 'LIMITS_KEY_A', limits: { requestsPerMinute: 1 } },
        { name: 'key-b', env: 'LIMITS_KEY_B', limits: { requestsPerMinute: 1 } },
      ]),
    );
    const g = await open('rpm');
    assert.equal((await ask(g)).status, 200);
    assert.equal((await ask(g)).status, 200);
    assert.deepEqual(sent('ok.rpm'), [KEY_A, KEY_B], 'the second has no room on key-a: key-b');
    const third = ask(g);
    assert.deepEqual(await timerArmed(), [60_000], 'held until the first leaves the minute');
    clock.advance(59_999);
    assert.deepEqual(sent('ok.rpm'), [KEY_A, KEY_B], 'nothing forwarded a millisecond before');
    clock.advance(1);
    assert.equal((await third).status, 200);
    assert.equal(sent('ok.rpm').length, 3);
    g.close();
  });

  it('tokensPerMinute: a credential that used its tokens holds the next request until they leave the minute', async () => {
    clock.advance(120_000);
    docs.splice(
      0,
      docs.length,
      doc('tpm', `${server.url}/s/ok.tpm`, [{ name: 'key-a', env: 'LIMITS_KEY_A', limits: { tokensPerMinute: 5 } }]),
    );
    const g = await open('tpm');
    assert.equal((await ask(g)).status, 200);
    clock.advance(10_000);
    const second = ask(g);
    assert.deepEqual(await timerArmed(), [50_000], "the first request's tokens leave the minute 50 s from now");
    assert.equal(sent('ok.tpm').length, 1);
    clock.advance(50_000);
    assert.equal((await second).status, 200);
    assert.deepEqual(sent('ok.tpm'), [KEY_A, KEY_A]);
    const m = g.close();
    assert.equal(m.requests, 2);
  });
});
