// `episodic init [DIR] --agent claude|codex|gemini|NAME`: a task that validates, with each CLI's headless
// command line and its own retries off, PROMPT.md and PLAN.md with RalphSharp's markers, the next command;
// never an overwritten file.
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse, stringify } from 'yaml';
import { readStatus, runCli, tempDir } from '../support/local.ts';

interface Written {
  metadata: { name: string };
  spec: {
    promptFile: string;
    workspace: string;
    agent: {
      command: string[];
      promptVia: string;
      output: string;
      credentials?: string;
      env?: Array<{ name: string; value: string }>;
    };
    progress: { checklist: string };
  };
}

const cases: Array<{ agent: string; check: (task: Written, yaml: string) => void }> = [
  {
    agent: 'claude',
    check: (task) => {
      assert.deepEqual(task.spec.agent.command.slice(0, 5), [
        'claude',
        '-p',
        '--output-format',
        'stream-json',
        '--verbose',
      ]);
      assert.deepEqual(
        task.spec.agent.env?.find((e) => e.name === 'CLAUDE_CODE_MAX_RETRIES'),
        {
          name: 'CLAUDE_CODE_MAX_RETRIES',
          value: '0',
        },
      );
      assert.equal(task.spec.agent.output, 'claude');
      assert.equal(task.spec.agent.credentials, 'claude', 'behind the gateway');
    },
  },
  {
    agent: 'codex',
    check: (task) => {
      const argv = task.spec.agent.command;
      assert.deepEqual(argv.slice(0, 3), ['codex', 'exec', '--json']);
      assert.ok(argv.includes('model_providers.episodic.request_max_retries=0'), argv.join(' '));
      assert.ok(argv.includes('model_providers.episodic.stream_max_retries=0'), argv.join(' '));
      assert.equal(argv.at(-1), '-');
      assert.equal(task.spec.agent.output, 'codex');
    },
  },
  {
    agent: 'gemini',
    check: (task, yaml) => {
      assert.deepEqual(task.spec.agent.command.slice(-3), ['stream-json', '--yolo', '--prompt']);
      assert.equal(task.spec.agent.promptVia, 'argument');
      assert.match(yaml, /"general":\{"maxAttempts":1\}/, 'says where its retries are turned off');
    },
  },
  {
    agent: 'aider',
    check: (task, yaml) => {
      assert.deepEqual(task.spec.agent.command, ['aider']);
      assert.equal(task.spec.agent.output, 'text');
      assert.match(yaml, /add aider's headless flags/);
    },
  },
];

for (const { agent, check } of cases) {
  test(`init --agent ${agent}: a valid task, PROMPT.md, PLAN.md and the next command; a second init refuses`, async () => {
    const dir = join(tempDir(), 'My Project');
    const init = await runCli(['init', dir, '--agent', agent]);
    assert.equal(init.code, 0, init.stderr);
    const yaml = readFileSync(join(dir, 'task.yaml'), 'utf8');
    const task = parse(yaml) as Written;
    assert.equal(task.metadata.name, 'my-project');
    check(task, yaml);
    const ws = join(dir, task.spec.workspace);
    assert.match(readFileSync(join(ws, task.spec.promptFile), 'utf8'), /<promise>COMPLETE<\/promise>/);
    const plan = readFileSync(join(ws, task.spec.progress.checklist), 'utf8');
    for (const marker of ['[ ] pending', '[~] in progress', '[x] done', '[!] failed', '[S] skipped'])
      assert.ok(plan.includes(marker), marker);
    assert.match(init.stdout, new RegExp(`next:\\n +\\S+ run '${dir.replace(/[/.]/g, '\\$&')}'\\n`));
    const validate = await runCli(['validate', dir]);
    assert.equal(validate.code, 0, validate.stderr);

    writeFileSync(join(ws, 'PLAN.md'), 'mine');
    const again = await runCli(['init', dir, '--agent', agent]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /would overwrite .*task\.yaml, .*PROMPT\.md, .*PLAN\.md; nothing written/);
    assert.equal(readFileSync(join(ws, 'PLAN.md'), 'utf8'), 'mine');
  });
}

test('init --agent PATH: the generic task runs as written, its prompt rendered from PROMPT.md', async () => {
  const dir = tempDir();
  const agent = join(dir, 'agent.sh');
  writeFileSync(agent, '#!/bin/sh\ncat > prompt-seen.txt\necho "<promise>COMPLETE</promise>"\n');
  chmodSync(agent, 0o755);
  const init = await runCli(['init', join(dir, 'specs'), '--agent', agent, '--name', 'first']);
  assert.equal(init.code, 0, init.stderr);
  const run = await runCli(['run', join(dir, 'specs')]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(readStatus(join(dir, 'specs'), 'first')?.status.phase, 'Succeeded');
  assert.match(
    readFileSync(join(dir, 'specs/ws/first/prompt-seen.txt'), 'utf8'),
    /episode 1 of at most 20 working on first/,
  );
});

test('init --agent claude: an AgentCredentials beside the task, which the task uses: the agent gets the gateway, never the key', async () => {
  const dir = tempDir();
  const specs = join(dir, 'specs');
  const init = await runCli(['init', specs, '--agent', 'claude', '--name', 'first']);
  assert.equal(init.code, 0, init.stderr);
  assert.match(init.stdout, /credentials\.yaml \(AgentCredentials claude: the gateway holds the key\)/);
  const credentials = parse(readFileSync(join(specs, 'credentials.yaml'), 'utf8'));
  assert.equal(credentials.kind, 'AgentCredentials');
  assert.equal(credentials.metadata.name, 'claude');
  assert.equal(credentials.spec.provider, 'anthropic');
  assert.deepEqual(credentials.spec.credentials, [{ name: 'main', env: 'ANTHROPIC_API_KEY' }]);
  assert.ok(credentials.spec.pricing['*'], 'every model priced: spend is metered at the wire');
  // The same task with a stand-in for claude that shows what it was given.
  const agent = join(dir, 'claude.sh');
  writeFileSync(agent, '#!/bin/sh\ncat >/dev/null\nenv > env-seen.txt\necho "<promise>COMPLETE</promise>"\n');
  chmodSync(agent, 0o755);
  const taskFile = join(specs, 'task.yaml');
  const task = parse(readFileSync(taskFile, 'utf8'));
  task.spec.agent = { ...task.spec.agent, command: [agent], output: 'text' };
  writeFileSync(taskFile, stringify(task));
  const key = 'sk-ant-init-test-real-key-0d41';
  const run = await runCli(['run', specs], { env: { ANTHROPIC_API_KEY: key } });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(readStatus(specs, 'first')?.status.phase, 'Succeeded');
  const seen = readFileSync(join(specs, 'ws/first/env-seen.txt'), 'utf8');
  assert.match(seen, /^ANTHROPIC_BASE_URL=http:\/\/127\.0\.0\.1:\d+\/t\/default\/first$/m);
  assert.match(seen, /^ANTHROPIC_API_KEY=episodic-gw-\S+$/m);
  assert.ok(!seen.includes(key), 'the agent holds the real key');
});

test('init: a bad --name or --agent is refused before anything is written', async () => {
  const dir = tempDir();
  assert.equal((await runCli(['init', dir, '--agent', 'claude', '--name', 'Not_A_Label'])).code, 2);
  assert.equal((await runCli(['init', dir, '--agent', '--verbose'])).code, 2);
  assert.equal((await runCli(['init', dir])).code, 2, '--agent is required');
  assert.equal((await runCli(['validate', dir])).code, 2, 'nothing written');
});
