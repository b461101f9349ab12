// A local agent, its gates and verify do not inherit the variables a spec names as secrets (issue 28): a
// webhook's secretEnv and a forge trigger's tokenEnv stay the controller's, unless a task asks by name.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { NODE, runCli, taskYaml, tempDir } from '../support/local.ts';

// A real process that writes the environment it got to a file in its workspace.
const DUMP = "require('fs').writeFileSync(process.env.OUT, JSON.stringify(Object.keys(process.env)))";

test('local: an agent gets neither a trigger’s tokenEnv nor a webhook’s secretEnv; a task that names one gets it', async () => {
  const dir = tempDir();
  const out = (name: string) => join(dir, `${name}.json`);
  const task = (name: string, asked: Array<{ name: string; value?: string }> = []) =>
    taskYaml({
      name,
      spec: {
        agent: { command: [NODE, '-e', DUMP], output: 'text', env: [{ name: 'OUT', value: out(name) }, ...asked] },
        completion: { onExitZero: true },
      },
    });
  const trigger = {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentTrigger',
    metadata: { name: 'hooked' },
    spec: {
      source: { webhook: { forge: 'github', secretEnv: 'EPI_TEST_HOOK_SECRET', tokenEnv: 'EPI_TEST_FORGE_TOKEN' } },
      template: { spec: { prompt: 'p', agent: { command: ['true'] } } },
    },
  };
  writeFileSync(
    join(dir, 'tasks.yaml'),
    [task('plain'), task('asks', [{ name: 'EPI_TEST_FORGE_TOKEN' }]), JSON.stringify(trigger)].join('\n---\n'),
  );
  const env = { EPI_TEST_HOOK_SECRET: 'hook-s3cret', EPI_TEST_FORGE_TOKEN: 'tok-s3cret', EPI_TEST_PLAIN: 'kept' };
  const res = await runCli(['run', dir], { env });
  assert.equal(res.code, 0, res.stdout + res.stderr);
  const plain = JSON.parse(readFileSync(out('plain'), 'utf8')) as string[];
  assert.ok(plain.includes('EPI_TEST_PLAIN') && plain.includes('PATH'), 'the rest of the environment is inherited');
  assert.ok(!plain.includes('EPI_TEST_HOOK_SECRET'), 'secretEnv withheld');
  assert.ok(!plain.includes('EPI_TEST_FORGE_TOKEN'), 'tokenEnv withheld');
  const asks = JSON.parse(readFileSync(out('asks'), 'utf8')) as string[];
  assert.ok(asks.includes('EPI_TEST_FORGE_TOKEN'), 'asked for by name');
  assert.ok(!asks.includes('EPI_TEST_HOOK_SECRET'));
});
