// What `episodic run` prints through a pipe (issue 31 §2): a line per event and the terminal's final table by
// default, JSON lines with --log-format json, "nothing to run" for triggers without --watch, and a command that
// cannot start said in plain words in the output, the status and the episode record.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { NODE, FAKE_CLAUDE, readStatus, runCli, specDir, tempDir } from '../support/local.ts';

const done = { episodes: { '1': { mode: 'continue', costUSD: 0.01 }, '2': { mode: 'success', costUSD: 0.02 } } };

test('through a pipe: event lines (time, task, what happened), then the final table and what to try next', async () => {
  const dir = specDir([{ name: 'piped', script: done }]);
  const res = await runCli(['run', dir, '--log-format', 'text']);
  assert.equal(res.code, 0, res.stderr);
  assert.doesNotMatch(res.stderr, /^\{/m, 'no JSON lines');
  assert.match(res.stderr, /^\d\d:\d\d:\d\d {2}piped {2}episode 1\/10 started$/m);
  assert.match(res.stderr, /^\d\d:\d\d:\d\d {2}piped {2}episode 2 succeeded .* — \$0\.0200$/m);
  const lines = res.stdout.trimEnd().split('\n');
  assert.match(lines[0], /^TASK\s+PHASE\s+EPISODE\s+RETRIES\s+RUNNING\s+PROGRESS\s+COST\s+LAST OUTCOME/);
  assert.match(lines[1], /^piped\s+Succeeded\s+2\/10\s+0\s+-\s+-\s+\$0\.0300\s+succeeded/);
  assert.equal(lines[2], '1 task, 0 running, total cost $0.0300');
  assert.equal(lines[3], 'Next:');
  assert.match(lines[4], new RegExp(`^ {2}bin/episodic\\.js get ${dir}\\s+every task`));
  assert.match(lines[5], new RegExp(`^ {2}bin/episodic\\.js get piped ${dir} --episodes\\s`));
  assert.match(lines[6], new RegExp(`^ {2}bin/episodic\\.js logs piped ${dir}\\s`));
  assert.match(lines[7], new RegExp(`^ {2}bin/episodic\\.js console ${dir}\\s`));
});

test('--log-format json: the JSON lines and a final status line per task, no table; a bad format is a usage error', async () => {
  const dir = specDir([{ name: 'machine', script: done }]);
  const res = await runCli(['run', dir, '--log-format', 'json']);
  assert.equal(res.code, 0, res.stderr);
  const records = res.stderr
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { msg: string; task?: string; phase?: string });
  assert.ok(records.some((r) => r.msg === 'final status' && r.task === 'machine' && r.phase === 'Succeeded'));
  assert.equal(res.stdout, '');
  const bad = await runCli(['run', dir, '--log-format', 'yaml']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--log-format: "yaml" is not one of text, json/);
});

test('triggers but no task and no --watch: "nothing to run", exit 0', async () => {
  const dir = tempDir();
  const trigger = (name: string) =>
    JSON.stringify({
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTrigger',
      metadata: { name },
      spec: {
        source: { schedule: { cron: '0 3 1 1 *' } },
        template: { spec: { prompt: 'p', agent: { command: [NODE, FAKE_CLAUDE] } } },
      },
    });
  writeFileSync(join(dir, 'triggers.yaml'), `${trigger('yearly')}\n---\n${trigger('also-yearly')}\n`);
  const res = await runCli(['run', dir, '--log-format', 'text']);
  assert.equal(res.code, 0, res.stdout + res.stderr);
  assert.equal(res.stdout, 'episodic run: nothing to run; 2 triggers are served only with --watch\n');
});

test('a command that is not on PATH: plain words and what to do, in the output, the status and the record', async () => {
  const dir = specDir([{ name: 'missing', spec: { agent: { command: ['claude-not-installed-xyz'] } } }]);
  const res = await runCli(['run', dir, '--log-format', 'text']);
  assert.equal(res.code, 1);
  const words =
    /cannot start claude-not-installed-xyz: not found on PATH — install it, or give spec\.agent\.command its full path/;
  assert.match(res.stderr, words);
  assert.match(res.stdout, new RegExp(`^missing: .*${words.source}`, 'm'), 'under the final table');
  assert.doesNotMatch(res.stdout + res.stderr, /spawn claude-not-installed-xyz ENOENT/);
  assert.match(readStatus(dir, 'missing')?.status.message ?? '', words);
  const record = JSON.parse(
    readFileSync(join(dir, '.episodic/logs/default/missing/episodes.jsonl'), 'utf8').split('\n')[0],
  );
  assert.match(record.message, words);
  const get = await runCli(['get', 'missing', dir, '--episodes', '-o', 'wide']);
  assert.match(get.stdout, words);
});
