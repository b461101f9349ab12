// The CLI surface: validate, get, logs, exit codes, metrics endpoint and metrics file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO, readStatus, runCli, specDir, startCli, taskYaml, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

test('validate: 0 for valid files, 2 with one line per error naming file and field', async () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'ok.yaml'), taskYaml({ name: 'ok' }));
  writeFileSync(
    join(dir, 'bad.yaml'),
    [
      'apiVersion: episodic.dev/v1alpha1',
      'kind: AgentTask',
      'metadata: {name: Bad_Name}',
      'spec: {prompt: x, agent: {command: [a]}}',
      '---',
      'apiVersion: episodic.dev/v1alpha1',
      'kind: AgentTask',
      'metadata: {name: two}',
      'spec: {prompt: x, agent: {command: "claude -p"}, limits: {maxEpisodes: 0}}',
      '---',
      'apiVersion: episodic.dev/v1alpha1',
      'kind: AgentTask',
      'metadata: {name: three}',
      'spec: {prompt: x, promptFile: y, agent: {command: [claude]}}',
      '---',
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata: {name: ignored}',
    ].join('\n'),
  );
  const good = await runCli(['validate', join(dir, 'ok.yaml')]);
  assert.equal(good.code, 0, good.stderr);
  assert.match(good.stdout, /1 AgentTask valid/);
  const bad = await runCli(['validate', join(dir, 'ok.yaml'), join(dir, 'bad.yaml'), join(dir, 'missing.yaml')]);
  assert.equal(bad.code, 2);
  const lines = bad.stderr.trim().split('\n');
  assert.ok(
    lines.some((l) => /bad\.yaml \(document 1\): metadata\.name: must be a lowercase RFC 1123 label/.test(l)),
    bad.stderr,
  );
  assert.ok(
    lines.some((l) => /bad\.yaml \(document 2\).*spec\.agent\.command:/.test(l)),
    bad.stderr,
  );
  assert.ok(
    lines.some((l) => /spec\.prompt: exactly one of prompt or promptFile/.test(l)),
    bad.stderr,
  );
  assert.ok(
    lines.some((l) => /spec\.limits\.maxEpisodes:/.test(l)),
    bad.stderr,
  );
  assert.ok(
    lines.some((l) => /missing\.yaml: no such file/.test(l)),
    bad.stderr,
  );
  assert.ok(!/ConfigMap/.test(bad.stderr), 'other kinds are ignored');
});

test('run: invalid usage exits 2', async () => {
  const dir = specDir([{ name: 'x' }]);
  assert.equal((await runCli(['run', dir, '--max-concurrent', 'zero'])).code, 2);
  assert.equal((await runCli(['run', join(dir, 'nope')])).code, 2);
  assert.equal((await runCli(['run', dir, '--no-such-flag'])).code, 2);
  assert.equal((await runCli(['frobnicate'])).code, 2);
});

test("help lists every subcommand; a subcommand's help, --version and unknown commands work with lazy loading", async () => {
  const help = await runCli(['--help']);
  assert.equal(help.code, 0);
  for (const name of ['run', 'get', 'validate', 'logs', 'crd', 'controller', 'episode']) {
    assert.match(help.stdout, new RegExp(`^  ${name} `, 'm'), `--help lists ${name}`);
  }
  const runHelp = await runCli(['run', '--help']);
  assert.equal(runHelp.code, 0);
  assert.match(runHelp.stdout, /--max-concurrent <n>/);
  assert.doesNotMatch(runHelp.stdout, /--kubeconfig/, "only run's own options");
  const version = await runCli(['--version']);
  assert.equal(version.code, 0);
  assert.equal(version.stdout.trim(), JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).version);
  const unknown = await runCli(['lgos']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command 'lgos'[\s\S]*Did you mean logs\?/);
});

test('get (table, wide, json, yaml) and logs after a run; metrics file written at exit', async () => {
  const dir = specDir([
    {
      name: 'alpha',
      script: {
        steps: [
          { mode: 'continue', text: 'first step done' },
          { mode: 'success', costUSD: 0.5 },
        ],
      },
    },
    { name: 'beta', namespace: 'team-b', script: { default: { mode: 'success' } } },
  ]);
  const metricsFile = join(dir, 'episodic.prom');
  const run = await runCli(['run', dir, '--metrics-file', metricsFile]);
  assert.equal(run.code, 0, run.stderr);

  const table = await runCli(['get', dir]);
  assert.equal(table.code, 0);
  assert.match(table.stdout, /NAMESPACE\s+NAME\s+PHASE\s+EPISODES\s+COST\s+REASON/);
  assert.match(table.stdout, /default\s+alpha\s+Succeeded\s+2\s+\$0\.5123\s+PromiseDetected/);
  assert.match(table.stdout, /team-b\s+beta\s+Succeeded\s+1/);
  const wide = await runCli(['get', dir, '-o', 'wide']);
  assert.match(wide.stdout, /LAST OUTCOME/);
  assert.match(wide.stdout, /succeeded/);

  const json = JSON.parse((await runCli(['get', dir, '-o', 'json'])).stdout);
  assert.equal(json.apiVersion, 'v1');
  assert.equal(json.kind, 'List');
  const alpha = json.items.find((i: { metadata: { name: string } }) => i.metadata.name === 'alpha');
  assert.equal(alpha.kind, 'AgentTask');
  assert.equal(alpha.status.phase, 'Succeeded');
  assert.equal(alpha.status.episodes, 2);
  assert.equal(alpha.status.tokens.input > 0, true);
  assert.equal(alpha.status.conditions.find((c: { type: string }) => c.type === 'Ready').status, 'True');
  const yaml = parse((await runCli(['get', dir, '-o', 'yaml'])).stdout);
  assert.equal(yaml.items.length, 2);
  assert.equal((await runCli(['get', dir, '-o', 'xml'])).code, 2);

  const logs = await runCli(['logs', 'alpha', '--dir', dir, '--episode', '1']);
  assert.equal(logs.code, 0, logs.stderr);
  assert.match(logs.stdout, /first step done/);
  const latest = await runCli(['logs', 'alpha', '--dir', dir]);
  assert.match(latest.stdout, /<promise>COMPLETE<\/promise>/);
  assert.equal((await runCli(['logs', 'alpha', '--dir', dir, '--episode', '9'])).code, 1);
  const followed = await runCli(['logs', 'alpha', '--dir', dir, '--episode', '1', '-f'], { timeoutMs: 10_000 });
  assert.equal(followed.code, 0, 'follow ends when the task is finished');
  assert.match(followed.stdout, /first step done[\s\S]*COMPLETE/);

  const metrics = readFileSync(metricsFile, 'utf8');
  assert.match(metrics, /episodic_episodes_total\{namespace="default",outcome="continue"\} 1/);
  assert.match(metrics, /episodic_episodes_total\{namespace="default",outcome="succeeded"\} 1/);
  assert.match(metrics, /episodic_cost_usd_total\{namespace="default"\} 0\.5123/);
  assert.match(metrics, /episodic_tokens_total\{namespace="team-b",kind="input"\} \d+/);
  assert.match(metrics, /episodic_episode_duration_seconds_bucket\{le="1",namespace="default",outcome="succeeded"\}/);
  assert.match(metrics, /process_cpu_user_seconds_total/);
  assert.doesNotMatch(metrics, /alpha/, 'no per-task label');
});

test('--metrics-addr serves /metrics, /healthz, /readyz while running', async () => {
  const dir = specDir([
    {
      name: 'served',
      script: { steps: [{ mode: 'transient' }, { mode: 'sleep', sleepSeconds: 60, children: false }] },
    },
  ]);
  const run = startCli(['run', dir, '--metrics-addr', '127.0.0.1:0', '--log-level', 'info']);
  const url = await waitFor('metrics url in the log', () => /"url":"(http:[^"]+)\/metrics"/.exec(run.output())?.[1]);
  await waitFor('second episode running', () => readStatus(dir, 'served')?.status.currentEpisode?.number === 2);
  const body = await (await fetch(`${url}/metrics`)).text();
  assert.match(body, /episodic_episode_retries_total\{namespace="default",reason="transient"\} 1/);
  assert.match(body, /episodic_tasks\{namespace="default",phase="Running"\} 1/);
  assert.equal((await fetch(`${url}/healthz`)).status, 200);
  assert.equal((await fetch(`${url}/readyz`)).status, 200);
  run.child.kill('SIGINT');
  assert.equal(await run.exited, 130);
});

test('--metrics-addr: tasks waiting are counted by reason (episodic_tasks_waiting)', async () => {
  const dir = specDir([
    {
      name: 'backing-off',
      spec: { backoff: { initialSeconds: 600, factor: 1, maxSeconds: 600 } },
      script: { default: { mode: 'fail' } },
    },
    { name: 'done', script: { default: { mode: 'success' } } },
  ]);
  const run = startCli(['run', dir, '--metrics-addr', '127.0.0.1:0', '--log-level', 'info']);
  const url = await waitFor('metrics url in the log', () => /"url":"(http:[^"]+)\/metrics"/.exec(run.output())?.[1]);
  await waitFor(
    'backing-off waits',
    () =>
      readStatus(dir, 'backing-off')?.status.reason === 'Backoff' &&
      readStatus(dir, 'done')?.status.phase === 'Succeeded',
  );
  const body = await waitFor(
    'a task waiting in Backoff in /metrics',
    async () => {
      const text = await (await fetch(`${url}/metrics`)).text();
      return /episodic_tasks_waiting\{namespace="default",reason="Backoff"\} 1/.test(text) && text;
    },
    10_000,
  );
  assert.doesNotMatch(
    body,
    /episodic_tasks_waiting\{[^}]*reason="(?!Backoff)/,
    'only the waiting task, under its reason',
  );
  run.child.kill('SIGINT');
  assert.equal(await run.exited, 130);
});

test('logs never contain secret env values from the spec', async () => {
  const dir = specDir([
    {
      name: 'secretive',
      spec: {
        agent: {
          command: [process.execPath, join(REPO, 'test/agents/fake-claude.mjs')],
          env: [{ name: 'ANTHROPIC_API_KEY', value: 'sk-very-secret-123' }],
        },
      },
      script: { default: { mode: 'success' } },
    },
  ]);
  const run = await runCli(['run', dir, '--log-level', 'trace']);
  assert.equal(run.code, 0, run.stderr);
  assert.doesNotMatch(run.stderr + run.stdout, /sk-very-secret-123/);
  assert.doesNotMatch(readFileSync(join(dir, '.episodic/status/default/secretive.json'), 'utf8'), /sk-very-secret-123/);
});
