// What a pool costs a request (issue 29 §3): the same requests through the gateway on one credential (the
// body streamed through) and on a pool of two (the body kept, so a 429 can be sent again on the other), and
// a request that fails over (a 429 on the first credential, then the other) against one that does not.
// Against the stand-in model server on 127.0.0.1; latencies in ms, ratios measured in the same run.
//   node bench/gateway-pool/pool.ts [--requests 300] [--body-kib 256]
import { parseArgs } from 'node:util';
import pino from 'pino';
import { CredentialPool } from '../../controller/gateway/credential-pool.ts';
import { startGateway } from '../../controller/gateway/gateway.ts';
import type { GrantSpec } from '../../controller/gateway/grants.ts';
import { startModelServer } from '../../test/model-server/server.ts';

const { values } = parseArgs({
  options: { requests: { type: 'string', default: '300' }, 'body-kib': { type: 'string', default: '256' } },
});
const N = Number(values.requests);
const body = JSON.stringify({
  model: 'claude-sonnet-4-5',
  stream: true,
  max_tokens: 10,
  messages: [{ role: 'user', content: 'x'.repeat(Number(values['body-kib']) * 1024) }],
});

const server = await startModelServer();
const gateway = await startGateway({ host: '127.0.0.1', log: pino({ level: 'silent' }) });
const KEY_A = 'sk-ant-api03-bench-key-a-000000000000';
const KEY_B = 'sk-ant-api03-bench-key-b-000000000000';

function grant(task: string, credentials: GrantSpec['credentials'], pool?: CredentialPool): string {
  const token = gateway.grants.issue({
    namespace: 'bench',
    task,
    episode: 1,
    provider: 'anthropic',
    upstream: `${server.url}/s/ok.bench`,
    credentials,
    pool,
    pricing: {},
    leash: { task: { costUSD: 0, tokens: 0 }, others: [] },
  });
  return token;
}

async function timed(task: string, token: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${gateway.baseUrl('bench', task)}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': token },
    body,
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`status ${res.status}`);
  return performance.now() - t0;
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];

async function series(name: string, task: string, token: string, before?: () => void) {
  const xs: number[] = [];
  for (let i = 0; i < 20; i++) await timed(task, token); // warm-up
  for (let i = 0; i < N; i++) {
    before?.();
    xs.push(await timed(task, token));
  }
  return { name, p50: pct(xs, 0.5), p99: pct(xs, 0.99) };
}

const single = grant('single', [{ name: 'a', value: KEY_A }]);
const pool = new CredentialPool([{ name: 'a' }, { name: 'b' }]);
const pooled = grant(
  'pooled',
  [
    { name: 'a', value: KEY_A },
    { name: 'b', value: KEY_B },
  ],
  pool,
);
// Alternated rounds so a load change on the machine hits both alike.
const rows: Array<{ name: string; p50: number; p99: number }> = [];
for (let round = 0; round < 2; round++) {
  rows.push(await series('one credential (body streamed)', 'single', single));
  rows.push(await series('pool of two (body kept)', 'pooled', pooled));
}
// Failover: key-a answers 429 each time (and is sticky no more); a fresh pool per request so a is tried first.
server.keyScenarios.set(KEY_A, 'ratelimit');
const fo = { name: 'pool, a 429 then the other', p50: 0, p99: 0 };
{
  const xs: number[] = [];
  for (let i = 0; i < N; i++) {
    const p = new CredentialPool([{ name: 'a' }, { name: 'b' }]);
    const t = grant(
      `fo${i}`,
      [
        { name: 'a', value: KEY_A },
        { name: 'b', value: KEY_B },
      ],
      p,
    );
    xs.push(await timed(`fo${i}`, t));
  }
  fo.p50 = pct(xs, 0.5);
  fo.p99 = pct(xs, 0.99);
}
const base = (name: string) => {
  const rs = rows.filter((r) => r.name === name);
  return { p50: Math.min(...rs.map((r) => r.p50)), p99: Math.min(...rs.map((r) => r.p99)) };
};
const one = base('one credential (body streamed)');
const two = base('pool of two (body kept)');
console.log(`${N} requests, ${values['body-kib']} KiB bodies, streamed answers; best of 2 alternated rounds`);
console.log('| path | p50 ms | p99 ms | p50 ratio to one credential |');
console.log('| --- | --- | --- | --- |');
for (const [name, r] of [
  ['one credential (body streamed)', one],
  ['pool of two (body kept)', two],
  [fo.name, fo],
] as const)
  console.log(`| ${name} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${(r.p50 / one.p50).toFixed(2)}x |`);
await gateway.close();
await server.close();
