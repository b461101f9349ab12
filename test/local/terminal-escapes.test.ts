// Untrusted text never drives the terminal (issue 12, item 5): escape sequences, raw newlines, huge lines
// and binary garbage from spec files or agent output are shown escaped and cut, in validate, get and run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, specDir, taskYaml, tempDir } from '../support/local.ts';
import { printable } from '../../controller/util/printable.ts';

const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/; // anything but \n and \t

function assertTerminalSafe(text: string, maxLine = 1200): void {
  assert.doesNotMatch(text, RAW_CONTROL, JSON.stringify(text.slice(0, 300)));
  for (const line of text.split('\n')) assert.ok(line.length <= maxLine, `a line of ${line.length} characters`);
}

test('printable: control characters escaped, long text cut with a count', () => {
  assert.equal(printable('a\u001b]0;pwned\u0007b\nc\td'), 'a\\x1b]0;pwned\\x07b\\nc\\td');
  assert.equal(printable('x'.repeat(12), 10), `${'x'.repeat(10)}… (2 more characters)`);
});

test('validate: hostile spec files give one bounded, escaped line each, naming the file', async () => {
  const dir = tempDir();
  const esc = '\u001b]0;pwned\u0007\u001b[2J';
  writeFileSync(join(dir, 'key.yaml'), taskYaml({ name: 'a', spec: { [`lim${esc}its`]: 1 } }));
  writeFileSync(
    join(dir, 'value.yaml'),
    taskYaml({ name: 'b', spec: { prompt: 7, agent: { command: [`x${esc}`], output: `text${esc}\nsecond line` } } }),
  );
  writeFileSync(join(dir, 'binary.yaml'), Buffer.concat([Buffer.from('spec: [\n'), randomBytes(10_000)]));
  writeFileSync(
    join(dir, 'long.yaml'),
    `apiVersion: episodic.dev/v1alpha1\nkind: AgentTask\nmetadata: {name: ${'n'.repeat(100_000)}}\nspec: {}\n`,
  );
  const res = await runCli(['validate', dir]);
  assert.equal(res.code, 2);
  assertTerminalSafe(res.stderr);
  for (const f of ['key.yaml', 'value.yaml', 'binary.yaml', 'long.yaml'])
    assert.ok(res.stderr.includes(join(dir, f)), `${f} not named:\n${res.stderr.slice(0, 2000)}`);
});

test('get: an agent message full of escape sequences is shown escaped', async () => {
  const text = 'done \u001b[31mred\u001b[0m \u001b]0;title\u0007 bell\u0007';
  const dir = specDir([
    { name: 'loud', spec: { completion: { onExitZero: true } }, script: { default: { mode: 'success', text } } },
  ]);
  const run = await runCli(['run', dir]);
  assert.equal(run.code, 0, run.stderr);
  for (const args of [
    ['get', dir, '-o', 'wide'],
    ['get', 'loud', dir, '--episodes', '-o', 'wide'],
  ]) {
    const res = await runCli(args);
    assert.equal(res.code, 0, res.stderr);
    assertTerminalSafe(res.stdout + res.stderr);
    if (args.includes('--episodes')) assert.match(res.stdout, /\\x1b\[31mred/);
  }
});
