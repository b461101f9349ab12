// The trigger runner against a forge that fails: an outage backs off (doubling from pollSeconds) and keeps
// the cursor, a rate limit waits until the forge's reset and says so in status, and the item is created
// exactly once when the forge answers again. A local HTTP server answers in Gitea's shapes; the clock is
// injected; tasks are created through the real local created-tasks store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { AgentTriggerSpecSchema } from '../../controller/api/agent-trigger.ts';
import { ManualClock } from '../../controller/core/clock.ts';
import { LocalCreatedTasks } from '../../controller/sources/local/created-tasks.ts';
import { LocalTriggerStatus } from '../../controller/sources/triggers/local-triggers.ts';
import { TriggerRunner } from '../../controller/sources/triggers/trigger-runner.ts';
import { tempDir } from '../support/local.ts';

const ISSUE = {
  number: 7,
  title: 'Broken',
  body: 'fix me',
  html_url: 'http://forge/o/r/issues/7',
  state: 'open',
  user: { login: 'alice' },
  labels: [{ name: 'agent' }],
  updated_at: '2026-01-01T00:00:00Z',
};

test('an outage backs off and loses nothing; a rate limit waits for its reset; one task in the end', async (t) => {
  const answers: Array<(res: http.ServerResponse) => void> = [];
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.url} ${req.headers.authorization ?? ''}`);
    const answer = answers.shift();
    if (answer) return answer(res);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(req.url?.startsWith('/api/v1/user') ? { login: 'episodic-bot' } : [ISSUE]));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const stateDir = join(tempDir(), '.episodic');
  const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
  const created = new LocalCreatedTasks({ stateDir });
  const status = new LocalTriggerStatus(stateDir);
  const runner = new TriggerRunner({
    created,
    finished: () => false,
    status,
    clock,
    random: () => 1, // no jitter: the backoff's full delay
    secret: async () => 'sekrit-token',
    logger: pino({ level: 'silent' }),
  });
  const spec = AgentTriggerSpecSchema.parse({
    source: { gitea: { apiURL: url, repo: 'o/r', labels: ['agent'], pollSeconds: 30, tokenEnv: 'T' } },
    template: { spec: { prompt: 'Fix {{item.title}}', agent: { command: ['agent'] } } },
  });
  const trigger = {
    key: 'default/fix',
    namespace: 'default',
    name: 'fix',
    spec,
    owner: { kind: 'AgentTrigger' as const, namespace: 'default', name: 'fix' },
  };
  const unavailable = (res: http.ServerResponse) => {
    res.statusCode = 503;
    res.end('down');
  };

  answers.push(unavailable);
  let next = await runner.pass(trigger);
  assert.equal(next.getTime() - clock.now().getTime(), 30_000, 'first failure: pollSeconds');
  assert.match(status.read('default/fix')?.lastError ?? '', /GET \/repos\/o\/r\/issues -> 503/);
  answers.push(unavailable);
  clock.advance(30_000);
  next = await runner.pass(trigger);
  assert.equal(next.getTime() - clock.now().getTime(), 60_000, 'second failure: doubled');
  assert.equal(status.read('default/fix')?.cursor, undefined, 'nothing seen, the cursor stays');

  // The rate limit: X-RateLimit-Remaining 0 and a reset 10 minutes away (longer than the backoff).
  const reset = Math.floor(clock.now().getTime() / 1000) + 600;
  answers.push((res) => {
    res.statusCode = 403;
    res.setHeader('x-ratelimit-remaining', '0');
    res.setHeader('x-ratelimit-reset', String(reset));
    res.end('rate limited');
  });
  clock.advance(60_000);
  next = await runner.pass(trigger);
  assert.equal(next.getTime(), reset * 1000);
  assert.equal(status.read('default/fix')?.rateLimitedUntil, new Date(reset * 1000).toISOString());

  clock.advance(600_000);
  await runner.pass(trigger);
  await runner.pass(trigger);
  const after = status.read('default/fix');
  assert.equal(after?.lastError, undefined);
  assert.equal(after?.rateLimitedUntil, undefined);
  assert.equal(after?.tasksCreated, 1);
  assert.deepEqual(
    (await created.list(trigger.owner)).map((c) => c.name),
    ['fix-7'],
  );
  assert.ok(
    seen.every((s) => s.endsWith('token sekrit-token')),
    'the token goes in the header',
  );
  assert.ok(!JSON.stringify(after).includes('sekrit'), 'never in status');
});

test('a schedule keeps historyLimit finished tasks; Replace deletes the running one before the new tick', async () => {
  const stateDir = join(tempDir(), '.episodic');
  const clock = new ManualClock(new Date('2026-01-01T00:00:30Z'));
  const created = new LocalCreatedTasks({ stateDir });
  let finished = true;
  const runner = new TriggerRunner({
    created,
    finished: () => finished,
    status: new LocalTriggerStatus(stateDir),
    clock,
    secret: async () => undefined,
    logger: pino({ level: 'silent' }),
  });
  const trigger = (concurrencyPolicy: string) => ({
    key: 'default/m',
    namespace: 'default',
    name: 'm',
    spec: AgentTriggerSpecSchema.parse({
      source: { schedule: { cron: '* * * * *', historyLimit: 2, concurrencyPolicy } },
      template: { spec: { prompt: 'tick {{tick}}', agent: { command: ['agent'] } } },
    }),
    owner: { kind: 'AgentTrigger' as const, namespace: 'default', name: 'm' },
  });
  const names = async () => (await created.list(trigger('Forbid').owner)).map((c) => c.name).sort();
  const minute = (m: number) => `m-20260101-${String(m).padStart(4, '0')}`; // 00:0m UTC
  await runner.pass(trigger('Forbid')); // first sight: from now on
  for (let m = 1; m <= 4; m++) {
    clock.advance(60_000);
    await runner.pass(trigger('Forbid'));
  }
  // historyLimit counts finished tasks: the pass keeps the two newest that had finished when it began, and the
  // task it just created (not finished yet, whatever this stub says later).
  assert.deepEqual(await names(), [minute(2), minute(3), minute(4)], 'the two newest finished ticks are kept');
  finished = false;
  clock.advance(60_000);
  await runner.pass(trigger('Replace'));
  assert.deepEqual(await names(), [minute(5)], 'Replace deleted the running ones; history keeps none unfinished');
});

test('historyLimit: 1 keeps one finished task: the one that finished after its tick deletes the older', async () => {
  const stateDir = join(tempDir(), '.episodic');
  const clock = new ManualClock(new Date('2026-01-01T00:00:30Z'));
  const created = new LocalCreatedTasks({ stateDir });
  const done = new Set<string>();
  const runner = new TriggerRunner({
    created,
    finished: (_ns, name) => done.has(name),
    status: new LocalTriggerStatus(stateDir),
    clock,
    secret: async () => undefined,
    logger: pino({ level: 'silent' }),
  });
  const trigger = {
    key: 'default/m',
    namespace: 'default',
    name: 'm',
    spec: AgentTriggerSpecSchema.parse({
      source: { schedule: { cron: '* * * * *', historyLimit: 1 } },
      template: { spec: { prompt: 'tick {{tick}}', agent: { command: ['agent'] } } },
    }),
    owner: { kind: 'AgentTrigger' as const, namespace: 'default', name: 'm' },
  };
  const names = async () => (await created.list(trigger.owner)).map((c) => c.name).sort();
  const minute = (m: number) => `m-20260101-${String(m).padStart(4, '0')}`; // 00:0m UTC
  await runner.pass(trigger); // first sight
  for (let m = 1; m <= 2; m++) {
    clock.advance(60_000);
    await runner.pass(trigger); // the tick's task is created, still running
    assert.ok((await names()).includes(minute(m)));
    done.add(minute(m)); // it finishes; `run` then calls reportPass (run --watch: its phase wakes a pass)
    await runner.reportPass(trigger);
  }
  assert.deepEqual(await names(), [minute(2)], 'one finished task, the newest');
});

test('an item labelled within the second of the cursor is looked at again (since= is inclusive to the second)', async (t) => {
  let labels: Array<{ name: string }> = [];
  const server = http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    const issue = { ...ISSUE, labels, updated_at: '2026-01-01T00:00:00Z' };
    res.end(JSON.stringify(req.url?.startsWith('/api/v1/user') ? { login: 'episodic-bot' } : [issue]));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => server.close());
  const stateDir = join(tempDir(), '.episodic');
  const created = new LocalCreatedTasks({ stateDir });
  const runner = new TriggerRunner({
    created,
    finished: () => false,
    status: new LocalTriggerStatus(stateDir),
    clock: new ManualClock(),
    secret: async () => 't',
    logger: pino({ level: 'silent' }),
  });
  const apiURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const spec = AgentTriggerSpecSchema.parse({
    source: { gitea: { apiURL, repo: 'o/r', labels: ['agent'], tokenEnv: 'T' } },
    template: { spec: { prompt: 'p', agent: { command: ['agent'] } } },
  });
  const owner = { kind: 'AgentTrigger' as const, namespace: 'default', name: 'fix' };
  const trigger = { key: 'default/fix', namespace: 'default', name: 'fix', spec, owner };
  await runner.pass(trigger);
  assert.deepEqual(await created.list(owner), [], 'no label yet');
  labels = [{ name: 'agent' }];
  await runner.pass(trigger);
  assert.deepEqual(
    (await created.list(owner)).map((c) => c.name),
    ['fix-7'],
  );
});

test('a refused status write does not escape the pass (it runs on a timer): retried within seconds', async () => {
  const stateDir = join(tempDir(), '.episodic');
  const clock = new ManualClock(new Date('2026-01-01T00:00:30Z'));
  let refused = 0;
  const runner = new TriggerRunner({
    created: new LocalCreatedTasks({ stateDir }),
    finished: () => true,
    status: {
      read: () => undefined,
      write: async () => {
        refused++;
        throw new Error('422 status.reported: unknown field');
      },
    },
    clock,
    secret: async () => undefined,
    logger: pino({ level: 'silent' }),
  });
  const spec = AgentTriggerSpecSchema.parse({
    source: { schedule: { cron: '0 * * * *' } },
    template: { spec: { prompt: 'tick', agent: { command: ['agent'] } } },
  });
  const owner = { kind: 'AgentTrigger' as const, namespace: 'default', name: 'h' };
  const next = await runner.pass({ key: 'default/h', namespace: 'default', name: 'h', spec, owner });
  assert.equal(refused, 1);
  assert.equal(next.getTime() - clock.now().getTime(), 5_000);
});
