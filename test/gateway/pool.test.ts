// A pool of two credentials behind the real gateway (the local binding, as `episodic run` wires it) and the
// stand-in model server told per key what to answer: a 429 or overload on one fails over to the other within
// the same request, a usage limit pauses its credential until the reset (kept in the state directory), a pool
// all paused is refused without a request upstream, and the metrics endpoint shows it all by name only.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { validateCredentialsSpec } from '../../controller/api/agent-credentials.ts';
import { ManualClock } from '../../controller/core/clock.ts';
import { LocalGatewayBinding } from '../../controller/executors/local/gateway-binding.ts';
import type { OpenedGrant } from '../../controller/executors/local/gateway-binding.ts';
import { EpisodicMetrics } from '../../controller/metrics/metrics.ts';
import { startMetricsServer } from '../../controller/metrics/server.ts';
import type { RunningServer } from '../../controller/metrics/server.ts';
import type { SpecCredentials } from '../../controller/sources/local/credentials-files.ts';
import { credentialsStatusPath } from '../../controller/util/state-layout.ts';
import { startModelServer } from '../model-server/server.ts';
import type { ModelServer } from '../model-server/server.ts';

const KEY_A = 'sk-ant-api03-pool-key-A-NEVER-SHOWN-1111';
const KEY_B = 'sk-ant-api03-pool-key-B-NEVER-SHOWN-2222';
const env = { POOL_KEY_A: KEY_A, POOL_KEY_B: KEY_B };
const PRICE = { inputPerMTok: 3, outputPerMTok: 20, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };
const start = new Date('2026-06-01T12:00:00Z');

function poolDoc(upstream: string, name = 'claude-pool'): SpecCredentials {
  const v = validateCredentialsSpec({
    provider: 'anthropic',
    upstream,
    credentials: [
      { name: 'key-a', env: 'POOL_KEY_A' },
      { name: 'key-b', env: 'POOL_KEY_B' },
    ],
    pricing: { '*': PRICE },
  });
  assert.ok(v.ok);
  return {
    key: `default/${name}`,
    namespace: 'default',
    name,
    file: 'creds.yaml',
    spec: v.spec,
    errors: [],
    specHash: 'h',
  };
}

async function ask(grant: OpenedGrant, stream = true): Promise<{ status: number; body: string; headers: Headers }> {
  const res = await fetch(`${grant.env.ANTHROPIC_BASE_URL}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': grant.env.ANTHROPIC_API_KEY },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', stream, max_tokens: 10, messages: [] }),
  });
  return { status: res.status, body: await res.text(), headers: res.headers };
}

describe('a credential pool behind the gateway', () => {
  let server: ModelServer;
  let metricsServer: RunningServer;
  let binding: LocalGatewayBinding;
  let stateDir: string;
  const clock = new ManualClock(start);
  const docs: SpecCredentials[] = [];
  let episode = 0;
  const open = async (task: string): Promise<OpenedGrant> => {
    const g = await binding.open({
      namespace: 'default',
      task,
      episode: ++episode,
      credentials: 'claude-pool',
      leash: { task: { costUSD: 0, tokens: 0 }, others: [] },
      onRefused: () => {},
    });
    assert.ok(g.ok, g.ok ? '' : g.message);
    return g;
  };
  const upstreamKeys = (tag: string) => server.requestsFor(tag).map((r) => [r.credential, r.status]);

  before(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'pool-'));
    server = await startModelServer({ now: () => Math.floor(clock.now().getTime() / 1000) });
    const metrics = new EpisodicMetrics({ defaultMetrics: false });
    metricsServer = await startMetricsServer({ address: '127.0.0.1:0', metrics });
    binding = new LocalGatewayBinding({
      lookup: () => docs,
      log: pino({ level: 'silent' }),
      stateDir,
      env,
      clock,
      metrics: metrics.gateway,
    });
  });
  after(async () => {
    await binding?.close();
    await metricsServer?.close();
    await server?.close();
    rmSync(stateDir, { recursive: true, force: true });
  });
  const use = (tag: string) => {
    docs.splice(0, docs.length, poolDoc(`${server.url}/s/ok.${tag}`));
    server.keyScenarios.clear();
  };

  it('a 429 on one credential: the same request succeeds on the other, invisibly, and the episode stays there', async () => {
    use('rl');
    server.keyScenarios.set(KEY_A, 'ratelimit');
    const g = await open('rl');
    const first = await ask(g);
    assert.equal(first.status, 200);
    assert.match(first.body, /message_stop/);
    assert.deepEqual(upstreamKeys('ok.rl'), [
      [KEY_A, 429],
      [KEY_B, 'stream'],
    ]);
    // Sticky: the next request of the episode goes to key-b first, even once key-a cooled down.
    clock.advance(10_000);
    server.keyScenarios.clear();
    assert.equal((await ask(g, false)).status, 200);
    assert.deepEqual(upstreamKeys('ok.rl').slice(2), [[KEY_B, 200]]);
    const m = g.close();
    assert.equal(m.requests, 2, 'the failed-over attempt is not charged to the episode');
  });

  it('an overload (529) fails over the same way', async () => {
    use('ov');
    server.keyScenarios.set(KEY_A, 'overloaded');
    const g = await open('ov');
    assert.equal((await ask(g, false)).status, 200);
    assert.deepEqual(upstreamKeys('ok.ov'), [
      [KEY_A, 529],
      [KEY_B, 200],
    ]);
    g.close();
  });

  it('a usage limit pauses its credential until the reset, kept in the state directory; the request succeeds on the other', async () => {
    clock.advance(120_000);
    use('ul');
    server.keyScenarios.set(KEY_A, 'usage');
    const g = await open('ul');
    assert.equal((await ask(g)).status, 200);
    g.close();
    const kept = JSON.parse(readFileSync(credentialsStatusPath(stateDir, 'default', 'claude-pool'), 'utf8'));
    const reset = new Date(clock.now().getTime() + 2 * 3_600_000).toISOString();
    const a = kept.credentials.find((c: { name: string }) => c.name === 'key-a');
    assert.equal(a.state, 'Paused');
    assert.equal(a.pausedUntil, reset);
    assert.match(a.lastError, /429 rate_limit_error/);
    assert.equal(kept.credentials.find((c: { name: string }) => c.name === 'key-b').state, 'Ready');
    assert.equal(await binding.pausedUntil('default', 'claude-pool'), undefined, 'one of two paused: the pool is not');
    // The next request goes straight to key-b: a paused credential is not asked.
    const g2 = await open('ul2');
    assert.equal((await ask(g2)).status, 200);
    assert.deepEqual(upstreamKeys('ok.ul').slice(2), [[KEY_B, 'stream']]);
    g2.close();
  });

  it('both at a usage limit: the agent sees the provider usage-limit answer; then nothing is forwarded until the reset', async () => {
    use('both');
    server.keyScenarios.set(KEY_A, 'usage');
    server.keyScenarios.set(KEY_B, 'usage');
    const woken: string[] = [];
    binding.pauses.subscribe((ns, name) => woken.push(`${ns}/${name}`));
    const g = await open('both');
    const limited = await ask(g);
    // The controller loop listens: every task of the pool is looked at again as soon as a pause begins.
    assert.ok(woken.includes('default/claude-pool'));
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('anthropic-ratelimit-unified-status'), 'rejected');
    const until = await binding.pausedUntil('default', 'claude-pool');
    assert.ok(until, 'every credential paused');
    const asked = server.requests.length;
    const refused = await ask(g);
    assert.equal(refused.status, 429);
    assert.match(refused.body, /every credential of this pool is at a usage limit until/);
    assert.equal(refused.headers.get('anthropic-ratelimit-unified-reset'), String(Math.ceil(until.getTime() / 1000)));
    assert.equal(server.requests.length, asked, 'nothing forwarded into a known limit');
    g.close();
    // After the reset the pool is used again, and an answer that succeeds lifts the pause.
    clock.advance(until.getTime() - clock.now().getTime() + 1000);
    server.keyScenarios.clear();
    assert.equal(await binding.pausedUntil('default', 'claude-pool'), undefined);
    const g2 = await open('after');
    assert.equal((await ask(g2)).status, 200);
    g2.close();
  });

  it('a new binding (a restarted controller) keeps the pauses from the state directory', async () => {
    use('restart');
    server.keyScenarios.set(KEY_A, 'usage');
    server.keyScenarios.set(KEY_B, 'usage');
    const g = await open('restart');
    await ask(g);
    g.close();
    const until = await binding.pausedUntil('default', 'claude-pool');
    assert.ok(until);
    const again = new LocalGatewayBinding({ lookup: () => docs, log: pino({ level: 'silent' }), stateDir, env, clock });
    assert.deepEqual(await again.pausedUntil('default', 'claude-pool'), until);
    await again.close();
  });

  it('the metrics endpoint: answers, tokens, cost and pauses by credential name, never a value or a task', async () => {
    const text = await (await fetch(`${metricsServer.url}/metrics`)).text();
    const line = (re: RegExp) => text.split('\n').find((l) => re.test(l));
    assert.ok(line(/^episodic_gateway_requests_total\{provider="anthropic",credential="key-a",code="429"\} [1-9]/));
    assert.ok(line(/^episodic_gateway_requests_total\{provider="anthropic",credential="key-a",code="529"\} 1$/));
    assert.ok(line(/^episodic_gateway_requests_total\{provider="anthropic",credential="key-b",code="200"\} [1-9]/));
    assert.ok(line(/^episodic_gateway_tokens_total\{provider="anthropic",credential="key-b",kind="output"\} [1-9]/));
    assert.ok(line(/^episodic_gateway_cost_usd_total\{namespace="default"\} 0\.\d+/));
    assert.ok(line(/^episodic_credential_paused\{credentials="claude-pool",credential="key-a"\} 1$/));
    assert.ok(line(/^episodic_credential_paused\{credentials="claude-pool",credential="key-b"\} 1$/));
    for (const secret of [KEY_A, KEY_B, 'POOL_KEY', 'task="']) assert.ok(!text.includes(secret), secret);
  });
});
