// A `source.webhook` trigger at maxConcurrency: a matching item delivered while the slots are full is held in
// the trigger's status (a webhook has no poll to see it again), survives a controller restart, and becomes
// its task when a running task finishes — the phase change wakes the trigger, no new delivery needed.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import { after, it } from 'node:test';
import pino from 'pino';
import { AgentTriggerSpecSchema } from '../../controller/api/agent-trigger.ts';
import { ManualClock } from '../../controller/core/clock.ts';
import type { HookServer } from '../../controller/forge/hook-server.ts';
import { LocalCreatedTasks } from '../../controller/sources/local/created-tasks.ts';
import { LocalTriggerStatus, TriggerTimers } from '../../controller/sources/triggers/local-triggers.ts';
import { PhaseWakes } from '../../controller/sources/triggers/phase-wakes.ts';
import { serveTriggerHooks } from '../../controller/sources/triggers/trigger-hooks.ts';
import type { RunnableTrigger } from '../../controller/sources/triggers/trigger-runner.ts';
import { TriggerRunner } from '../../controller/sources/triggers/trigger-runner.ts';
import { tempDir } from '../support/local.ts';

const SECRET = 'hook-secret';
const spec = AgentTriggerSpecSchema.parse({
  source: { webhook: { forge: 'gitea', repo: 'o/r', labels: ['agent'], secretEnv: 'S' } },
  template: { spec: { prompt: 'Fix #{{item.number}}: {{item.title}}', agent: { command: ['a'] } } },
  maxConcurrency: 1,
});
const trigger: RunnableTrigger = {
  key: 'default/one',
  namespace: 'default',
  name: 'one',
  spec,
  owner: { kind: 'AgentTrigger', namespace: 'default', name: 'one' },
};
const stateDir = join(tempDir(), '.episodic');
const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
const finished = new Set<string>();
const secret = async (s: { tokenEnv?: string }) => (s.tokenEnv === 'S' ? SECRET : undefined);
const servers: HookServer[] = [];
let timers: TriggerTimers | undefined;
after(async () => {
  timers?.stop();
  for (const s of servers) await s.close();
});

/** A controller's trigger parts over the state dir: what a restart builds afresh. */
async function controller() {
  const created = new LocalCreatedTasks({ stateDir });
  const status = new LocalTriggerStatus(stateDir);
  const runner = new TriggerRunner({
    created,
    finished: (_ns, name) => finished.has(name),
    status,
    clock,
    secret,
    logger: pino({ level: 'silent' }),
  });
  const server = await serveTriggerHooks('127.0.0.1:0', {
    trigger: (key) => (key === trigger.key ? trigger : undefined),
    wake: () => undefined,
    runner,
    secret,
    log: pino({ level: 'silent' }),
  });
  servers.push(server);
  return { created, status, runner, server };
}

let ids = 0;
async function deliver(server: HookServer, number: number): Promise<number> {
  const body = JSON.stringify({
    action: 'opened',
    repository: { full_name: 'o/r' },
    issue: {
      number,
      title: `Issue ${number}`,
      body: 'b',
      html_url: `http://gitea/o/r/issues/${number}`,
      state: 'open',
      user: { login: 'alice' },
      labels: [{ name: 'agent' }],
    },
  });
  const headers = {
    'content-type': 'application/json',
    'x-gitea-event': 'issues',
    'x-gitea-delivery': `d-${++ids}`,
    'x-gitea-signature': createHmac('sha256', SECRET).update(body).digest('hex'),
  };
  const res = await fetch(`${server.url}/hooks/default/one`, { method: 'POST', body, headers });
  await res.text();
  return res.status;
}

async function until(what: string, cond: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

it('an item held back at maxConcurrency is kept in status across a restart and created when a slot frees', async () => {
  const first = await controller();
  const names = async (c: { created: LocalCreatedTasks }) =>
    (await c.created.list(trigger.owner)).map((t) => t.name).sort();
  assert.equal(await deliver(first.server, 1), 202);
  assert.deepEqual(await names(first), ['one-1']);
  assert.equal(await deliver(first.server, 2), 202);
  assert.deepEqual(await names(first), ['one-1'], 'the slot is taken: item 2 waits');
  const held = first.status.read(trigger.key)?.heldItems ?? [];
  assert.deepEqual(
    held.map((h) => [h.number, h.title]),
    [[2, 'Issue 2']],
  );

  // A restart: nothing in memory survives, the status on disk does.
  await first.server.close();
  const second = await controller();
  timers = new TriggerTimers(second.runner, clock);
  const wakes = new PhaseWakes(timers);
  timers.set([trigger]);
  clock.advance(0);
  const [task1] = await second.created.list(trigger.owner);
  assert.ok(task1);
  wakes.seen('default', 'one-1', task1.labels, 'Running');
  await until('the first pass', async () => second.status.read(trigger.key)?.lastPollAt !== undefined);
  assert.deepEqual(await names(second), ['one-1'], 'still no slot after the restart');
  assert.deepEqual(
    second.status.read(trigger.key)?.heldItems?.map((h) => h.number),
    [2],
  );

  finished.add('one-1');
  wakes.seen('default', 'one-1', task1.labels, 'Succeeded');
  clock.advance(0);
  await until('task one-2', async () => (await names(second)).includes('one-2'));
  const [task2] = (await second.created.list(trigger.owner)).filter((t) => t.name === 'one-2');
  assert.match(JSON.stringify(task2?.spec), /Fix #2: Issue 2/);
  await until('the held list cleared', async () => second.status.read(trigger.key)?.heldItems === undefined);
  assert.equal(second.status.read(trigger.key)?.tasksCreated, 2);
});
