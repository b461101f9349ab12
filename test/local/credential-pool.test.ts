// A pool whose every credential hits a usage limit, end to end: the first episode meets the limit on both
// credentials (the stand-in model server is told per key), the other tasks wait CredentialsExhausted without
// starting an episode (the model server's count says so), a restarted `episodic run` keeps the pause (a task
// new to it is held too, with nothing sent), and with an injected clock every held task starts after the reset.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import pino from 'pino';
import { ManualClock } from '../../controller/core/clock.ts';
import { LocalController } from '../../controller/local/local-controller.ts';
import { CREDENTIALS_EXHAUSTED, CREDENTIALS_RESUME_JITTER_MS } from '../../controller/reconciler/credentials-hold.ts';
import { loadSpecDir } from '../../controller/sources/local/spec-files.ts';
import { startModelServer } from '../model-server/server.ts';
import { NODE, REPO, readStatus, startCli, tempDir, taskYaml } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const KEY_A = 'sk-ant-api03-e2e-pool-A-never-in-the-agent';
const KEY_B = 'sk-ant-api03-e2e-pool-B-never-in-the-agent';
const AGENT = join(REPO, 'test/agents/messages-agent.mjs');

function writeSpecs(dir: string, upstream: string, tasks: string[]): void {
  const creds = {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentCredentials',
    metadata: { name: 'claude-pool' },
    spec: {
      provider: 'anthropic',
      upstream,
      credentials: [
        { name: 'key-a', env: 'E2E_POOL_KEY_A' },
        { name: 'key-b', env: 'E2E_POOL_KEY_B' },
      ],
    },
  };
  writeFileSync(join(dir, 'creds.yaml'), JSON.stringify(creds));
  for (const name of tasks) writeFileSync(join(dir, `${name}.yaml`), task(name));
}

const task = (name: string) =>
  taskYaml({
    name,
    spec: {
      agent: { command: [NODE, AGENT], output: 'text', credentials: 'claude-pool' },
      workspace: undefined,
      limits: { maxEpisodes: 3, episodeTimeoutSeconds: 30 },
    },
  });

const heldTasks = (dir: string, names: string[]) =>
  names.filter((n) => readStatus(dir, n)?.status.reason === CREDENTIALS_EXHAUSTED);
const episodesOf = (dir: string, names: string[]) =>
  names.reduce((sum, n) => sum + (readStatus(dir, n)?.status.episodes ?? 0), 0);

async function startLocal(dir: string, clock: ManualClock, maxConcurrent: number): Promise<LocalController> {
  const stateDir = join(dir, '.episodic');
  const controller = new LocalController({ dir, stateDir, maxConcurrent, logger: pino({ level: 'silent' }), clock });
  const specs = await loadSpecDir(dir);
  await controller.recover(specs);
  controller.setSpecs(specs);
  return controller;
}

it('a pool at its usage limit: tasks wait CredentialsExhausted with no episode, across a restart of `episodic run`, and start after the reset', async () => {
  const clock = new ManualClock(new Date());
  // The model server's resets are in the controller's virtual time (which starts at the real time).
  const server = await startModelServer({ now: () => Math.floor(clock.now().getTime() / 1000) });
  const dir = tempDir('pool-');
  const names = ['t1', 't2', 't3'];
  writeSpecs(dir, `${server.url}/s/ok.pool`, names);
  server.keyScenarios.set(KEY_A, 'usage');
  server.keyScenarios.set(KEY_B, 'usage');
  process.env.E2E_POOL_KEY_A = KEY_A;
  process.env.E2E_POOL_KEY_B = KEY_B;
  const sent = () => server.requestsFor('ok.pool').map((r) => [r.credential, r.status]);
  try {
    // One slot: the first episode meets the limit before any other may start.
    const first = await startLocal(dir, clock, 1);
    await waitFor('every task held', () => heldTasks(dir, names).length === 3, 30_000);
    await first.shutdown();
    assert.equal(episodesOf(dir, names), 1, 'one episode met the limit; no other started into it');
    assert.deepEqual(sent(), [
      [KEY_A, 429],
      [KEY_B, 429],
    ]);
    // The model server names the reset in whole seconds, as the real API does.
    const reset = new Date((Math.floor(clock.now().getTime() / 1000) + 2 * 3600) * 1000);
    assert.equal(
      readStatus(dir, 't2')?.status.message,
      `every credential of AgentCredentials claude-pool is paused by a usage limit; the earliest reset is ${reset.toISOString()}`,
    );

    // A real restart: `episodic run` holds a task it has never seen, from the pause kept in the state directory.
    writeFileSync(join(dir, 't4.yaml'), task('t4'));
    const env = { E2E_POOL_KEY_A: KEY_A, E2E_POOL_KEY_B: KEY_B };
    const run = startCli(['run', dir, '--max-concurrent', '1', '--no-table'], { env });
    try {
      await waitFor('the new task held', () => heldTasks(dir, ['t4']).length === 1, 30_000);
    } finally {
      run.child.kill('SIGINT');
      await run.exited;
    }
    assert.equal(episodesOf(dir, [...names, 't4']), 1);
    assert.equal(sent().length, 2, 'nothing sent after the restart');

    // Past the reset and its jitter (virtual time), every held task starts, and the pool answers again.
    server.keyScenarios.clear();
    const later = new ManualClock(new Date(reset.getTime() + CREDENTIALS_RESUME_JITTER_MS + 1));
    const second = await startLocal(dir, later, 4);
    const all = [...names, 't4'];
    await waitFor(
      'all succeeded after the reset',
      () => all.every((n) => readStatus(dir, n)?.status.phase === 'Succeeded'),
      30_000,
    );
    await second.shutdown();
    assert.equal(episodesOf(dir, all), 5, 'the one that met the limit, then one each after the reset');
    assert.deepEqual(
      sent()
        .slice(2)
        .map(([, status]) => status),
      [200, 200, 200, 200],
    );
  } finally {
    await server.close();
    delete process.env.E2E_POOL_KEY_A;
    delete process.env.E2E_POOL_KEY_B;
  }
});
