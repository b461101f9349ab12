// Outputs end to end in local mode (`episodic run`, real processes, stand-in agents): a step publishes outputs
// through its final answer and through $EPISODIC_OUTPUTS, the next step's prompt reads them verbatim; a bad
// key is dropped and named; an unknown reference renders empty and is named; status, step status, records
// and `get -o json` show them; and a dependent task reads its dependency's outputs.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import {
  FAKE_CLAUDE,
  FAKE_CODEX,
  isAlive,
  NODE,
  readStatus,
  runCli,
  specDir,
  startCli,
  tempDir,
} from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

interface Run {
  agent: string;
  env: Record<string, string>;
  stdin: string;
}

const runs = (file: string): Run[] =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Run);

function records(dir: string, name: string): Array<Record<string, unknown>> {
  const file = join(dir, '.episodic', 'logs', 'default', name, 'episodes.jsonl');
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
}

// Untrusted agent text: shell syntax, a template, a newline and a NUL must reach the next prompt as written.
const HOSTILE = '$(rm -rf /) `id` {{task}} {{steps.plan.outputs.FILES}}';

test('outputs: plan publishes (final answer and $EPISODIC_OUTPUTS), implement reads them verbatim', async () => {
  const record = join(tempDir('episodic-outputs-record-'), 'runs.jsonl');
  const planText = [
    'Planned.',
    '<output name="FILES">src/a.ts src/b.ts</output>',
    `<output name="EVIL">${HOSTILE}</output>`,
  ].join('\n');
  const dir = specDir([
    {
      name: 'feature',
      spec: {
        prompt: undefined,
        agent: {
          command: [NODE, FAKE_CLAUDE, '-p', '--output-format', 'stream-json', '--verbose'],
          output: 'claude',
          env: [{ name: 'FAKE_AGENT_RECORD', value: record }],
        },
        steps: [
          {
            name: 'plan',
            prompt: 'Plan it.',
            agent: {
              env: [
                { name: 'FAKE_AGENT_TEXT', value: planText },
                { name: 'FAKE_AGENT_PROMISE', value: 'PLANNED' },
                // A later value of a key wins (the file's over the answer's); a bad key is dropped and named.
                {
                  name: 'FAKE_AGENT_OUTPUTS',
                  value: JSON.stringify({ ORDER: 'b before a', CTRL: 'line1\nline2\u0000end', 'bad-key': 'x' }),
                },
              ],
            },
            completion: { promise: 'PLANNED' },
          },
          {
            name: 'implement',
            prompt:
              'Files: {{steps.plan.outputs.FILES}}\nOrder: {{steps.plan.outputs.ORDER}}\nEvil: {{steps.plan.outputs.EVIL}}\nCtrl: {{steps.plan.outputs.CTRL}}\nMissing: [{{steps.plan.outputs.MISSING}}]',
            agent: {
              command: [NODE, FAKE_CODEX, 'exec', '--json'],
              output: 'codex',
              env: [{ name: 'FAKE_AGENT_OUTPUTS', value: 'RESULT=built\nFILES=src/a.ts\n' }],
            },
          },
        ],
      },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);

  const [plan, implement] = runs(record);
  const outputsFile = plan.env.EPISODIC_OUTPUTS;
  assert.ok(outputsFile, 'the agent is told where to write');
  assert.ok(relative(join(dir, 'ws'), outputsFile).startsWith('..'), `outside the workspace: ${outputsFile}`);
  assert.ok(outputsFile.startsWith(join(dir, '.episodic')), `in the state directory: ${outputsFile}`);
  assert.notEqual(implement.env.EPISODIC_OUTPUTS, outputsFile, 'one file per episode');
  assert.match(implement.stdin, /^Files: src\/a\.ts src\/b\.ts$/m);
  assert.match(implement.stdin, /^Order: b before a$/m);
  assert.ok(implement.stdin.includes(`Evil: ${HOSTILE}\n`), 'rendered verbatim, never expanded again');
  assert.ok(implement.stdin.includes('Ctrl: line1\nline2\uFFFDend\n'), 'NUL replaced');
  assert.match(implement.stdin, /^Missing: \[\]$/m);

  const s = readStatus(dir, 'feature')?.status;
  assert.equal(s?.phase, 'Succeeded');
  const planOutputs = {
    FILES: 'src/a.ts src/b.ts',
    EVIL: HOSTILE,
    ORDER: 'b before a',
    CTRL: 'line1\nline2\uFFFDend',
  };
  assert.deepEqual(s?.steps?.[0].outputs, planOutputs);
  assert.deepEqual(s?.steps?.[1].outputs, { RESULT: 'built', FILES: 'src/a.ts' });
  assert.deepEqual(s?.outputs, {
    EVIL: HOSTILE,
    ORDER: 'b before a',
    CTRL: planOutputs.CTRL,
    RESULT: 'built',
    FILES: 'src/a.ts',
  });

  const [planRecord, implementRecord] = records(dir, 'feature');
  assert.deepEqual(planRecord.outputs, planOutputs);
  assert.match(String(planRecord.outputsNote), /^outputs dropped: "bad-key" \(not a C identifier\)$/);
  assert.match(String(planRecord.message), /\(outputs dropped: "bad-key"/);
  assert.equal(implementRecord.outputsNote, 'unknown outputs rendered empty: steps.plan.outputs.MISSING');

  const get = await runCli(['get', 'feature', dir, '-o', 'json']);
  assert.equal(get.code, 0, get.stderr);
  const task = JSON.parse(get.stdout);
  assert.equal(task.metadata.name, 'feature');
  assert.deepEqual(task.status.outputs, s?.outputs);
  assert.deepEqual(task.status.steps[0].outputs, planOutputs);
  const named = await runCli(['get', 'feature', '-o', 'json'], { cwd: dir });
  assert.deepEqual(JSON.parse(named.stdout).status.outputs, s?.outputs, 'NAME alone: in the current directory');
  const missing = await runCli(['get', 'nope', dir]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /no AgentTask default\/nope in /);
});

test('outputs: a dependent task reads {{tasks.NAME.outputs.KEY}} of a task in its dependsOn', async () => {
  const record = join(tempDir('episodic-outputs-record-'), 'runs.jsonl');
  const env = (extra: Array<{ name: string; value: string }>) => [
    { name: 'FAKE_AGENT_RECORD', value: record },
    ...extra,
  ];
  const dir = specDir([
    {
      name: 'api',
      spec: {
        prompt: 'Build the API.',
        agent: {
          command: [NODE, FAKE_CLAUDE],
          output: 'claude',
          env: env([
            { name: 'FAKE_AGENT_OUTPUTS', value: JSON.stringify({ URL: 'http://api.local:8080', PORT: 8080 }) },
          ]),
        },
      },
    },
    {
      name: 'client',
      spec: {
        dependsOn: ['api'],
        prompt:
          'Call {{tasks.api.outputs.URL}} on {{tasks.api.outputs.PORT}}; [{{tasks.api.outputs.NOPE}}] [{{tasks.other.outputs.X}}]',
        agent: { command: [NODE, FAKE_CLAUDE], output: 'claude', env: env([]) },
      },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const client = runs(record).find((r) => r.env.EPISODIC_TASK === 'client');
  assert.ok(client);
  assert.equal(client.stdin.trim(), 'Call http://api.local:8080 on 8080; [] []');
  assert.deepEqual(readStatus(dir, 'api')?.status?.outputs, { URL: 'http://api.local:8080', PORT: '8080' });
  assert.equal(
    records(dir, 'client')[0].outputsNote,
    'unknown outputs rendered empty: tasks.api.outputs.NOPE, tasks.other.outputs.X',
  );
});

test('outputs: kill -9 of the controller after the episode published them: the restart records them all', async () => {
  const dir = tempDir();
  const record = join(dir, 'runs.jsonl');
  const go = join(dir, 'go');
  const text = 'Done. <output name="FROM_ANSWER">in the log</output>';
  const script = { default: { mode: 'success', text, outputs: 'FROM_FILE=beside the log\n', waitForFile: go }, record };
  specDir([{ name: 'crash', script }], { dir });
  const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '');
  const first = startCli(['run', dir]);
  const agentPid = await waitFor('the agent started', () => {
    const line = read(record).split('\n')[0];
    return line ? (JSON.parse(line) as { pid: number }).pid : undefined;
  });
  const log = join(dir, '.episodic/logs/default/crash/episode-1.log');
  await waitFor('its init event in the log', () => read(log).includes('"subtype":"init"'));
  // The controller is stopped while the agent answers and exits, then killed: nothing of it passed through.
  first.child.kill('SIGSTOP');
  writeFileSync(go, '');
  await waitFor('the agent to exit', () => !isAlive(agentPid));
  first.child.kill('SIGKILL');
  await first.exited;
  assert.equal(readStatus(dir, 'crash')?.status.outputs, undefined, 'nothing recorded before the kill');

  const second = await runCli(['run', dir]);
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stderr, /its end is read from its log/);
  const want = { FROM_ANSWER: 'in the log', FROM_FILE: 'beside the log' };
  const s = readStatus(dir, 'crash')?.status;
  assert.equal(s?.episodes, 1, 'not redone');
  assert.deepEqual(s?.outputs, want);
  assert.deepEqual(records(dir, 'crash')[0].outputs, want);
});
