// A created task (a spawned child, a trigger's task) locally: a spec document under the state dir, which
// `episodic run` runs beside the user's tasks (its workspace resolved as its owner's) and `episodic get` shows.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { LocalCreatedTasks } from '../../controller/sources/local/created-tasks.ts';
import { FAKE_CLAUDE, NODE, readStatus, runCli, specDir } from '../support/local.ts';

test('a created task runs with the spec directory, in its owner’s workspace root, and shows in get', async () => {
  const dir = specDir([{ name: 'planner', spec: { agent: { command: [NODE, FAKE_CLAUDE, '--fake-mode=success'] } } }]);
  const spec = {
    prompt: 'child work',
    agent: { command: [NODE, FAKE_CLAUDE, '--fake-mode=success'], output: 'claude' },
    workspace: 'ws/planner-a',
    limits: { maxEpisodes: 3, episodeTimeoutSeconds: 30 },
  };
  const store = new LocalCreatedTasks({ stateDir: join(dir, '.episodic') });
  const owner = { kind: 'AgentTask' as const, namespace: 'default', name: 'planner', file: join(dir, 'planner.yaml') };
  assert.deepEqual(await store.create(owner, 'planner-a', spec), { result: 'created' });

  const run = await runCli(['run', dir, '--no-table']);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(readStatus(dir, 'planner-a')?.status.phase, 'Succeeded');
  assert.equal(readStatus(dir, 'planner')?.status.phase, 'Succeeded');
  assert.ok(readdirSync(join(dir, 'ws')).includes('planner-a'), 'the workspace resolved against the owner’s file');
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.endsWith('.yaml')),
    ['planner.yaml'],
    'the user’s spec directory is not written',
  );

  const got = await runCli(['get', dir, '-o', 'json']);
  assert.equal(got.code, 0, got.stderr);
  const items = (JSON.parse(got.stdout) as { items: Array<{ metadata: { name: string; labels?: object } }> }).items;
  const child = items.find((i) => i.metadata.name === 'planner-a');
  assert.deepEqual(child?.metadata.labels, { 'episodic.dev/parent': 'planner' });
});

test('created documents are read again only when they change; one the controller did not write still parses', async () => {
  const stateDir = join(specDir([]), '.episodic');
  const store = new LocalCreatedTasks({ stateDir });
  const owner = { kind: 'AgentTrigger' as const, namespace: 'default', name: 'fix' };
  await store.create(
    owner,
    'fix-1',
    { prompt: 'one', agent: { command: ['a'] } },
    { 'episodic.dev/trigger-item': '1' },
  );
  const specs = async () => (await store.list(owner)).map((t) => [t.name, t.spec.prompt]);
  assert.deepEqual(await specs(), [['fix-1', 'one']]);
  assert.deepEqual(await specs(), [['fix-1', 'one']], 'the same from the parsed copy');
  // Replaced by hand, in YAML: the stat changed, so it is parsed again (by the YAML parser: not JSON).
  const file = join(stateDir, 'created/default/fix-1.yaml');
  const yaml = readFileSync(file, 'utf8').replace('"prompt": "one"', '"prompt": "edited, and longer"');
  rmSync(file);
  writeFileSync(file, `# by hand\n${yaml}`);
  assert.deepEqual(await specs(), [['fix-1', 'edited, and longer']]);
  rmSync(file);
  assert.deepEqual(await specs(), []);
});
