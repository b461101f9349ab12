// The episode runner end to end: the real CLI as a subprocess with stand-in agents, checked the way the
// cluster controller sees it (exit code + termination message) and the way a human does (kubectl logs).
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { TERMINATION_MESSAGE_LIMIT } from '../../controller/api/episode-config.ts';
import { episodeConfig, fakeClaude, nodeAgent, removeTempDirs, runRunner, tempDir } from './runner-harness.ts';

describe('episodic episode', () => {
  after(removeTempDirs);

  it('reports a completed episode: promise, cost, tokens, exit 0, and streams the agent output', async () => {
    const ws = await tempDir('ws');
    const run = await runRunner({
      agent: fakeClaude,
      config: episodeConfig({ workspaceDir: ws }),
      prompt: 'Finish the plan.',
      env: { FAKE_AGENT_MODE: 'success', FAKE_AGENT_COST_USD: '0.42' },
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.result?.exitCode, 0);
    assert.equal(run.result?.completion, 'promise');
    assert.equal(run.result?.format, 'claude');
    assert.equal(run.result?.costUSD, 0.42);
    assert.ok((run.result?.tokens.input ?? 0) > 0);
    assert.equal(run.result?.errorClass, 'none');
    // What `kubectl logs` shows: the agent's own stream-json, line by line.
    assert.match(run.stdout, /^\{"type":"system","subtype":"init"/m);
    assert.match(run.stdout, /"type":"result"/);
    assert.match(run.stderr, /episodic: team-a\/demo episode 1 of 5 starting/);
    assert.match(run.stderr, /episodic: episode finished: exit 0, completion promise, \$0\.4200/);
  });

  it('classifies an overloaded API as transient and exits with the agent code', async () => {
    const run = await runRunner({
      agent: fakeClaude,
      config: episodeConfig({ workspaceDir: await tempDir('ws') }),
      prompt: 'Work.',
      env: { FAKE_AGENT_MODE: 'transient' },
    });
    assert.equal(run.code, 1);
    assert.equal(run.result?.exitCode, 1);
    assert.equal(run.result?.errorClass, 'transient');
    assert.equal(run.result?.agentError, true);
  });

  it('passes the agent exit code through, and uses 1 when the agent never ran', async () => {
    const seven = await runRunner({
      agent: nodeAgent('console.log("bye"); process.exit(7)'),
      config: episodeConfig({ workspaceDir: await tempDir('ws') }),
      prompt: 'x',
    });
    assert.equal(seven.code, 7);
    assert.equal(seven.result?.exitCode, 7);
    assert.equal(seven.stdout, 'bye\n');

    const missing = await runRunner({
      agent: ['/nonexistent/agent-binary'],
      config: episodeConfig({ workspaceDir: await tempDir('ws') }),
      prompt: 'x',
    });
    assert.equal(missing.code, 1);
    assert.equal(missing.result?.exitCode, null);
    assert.equal(missing.result?.errorClass, 'fatal');
  });

  it('gives the prompt to the agent and keeps git credentials away from it', async () => {
    const script = `
      let stdin = '';
      process.stdin.on('data', (d) => (stdin += d)).on('end', () => {
        const seen = { stdin, token: process.env.GIT_TOKEN ?? null, user: process.env.GIT_USERNAME ?? null,
          password: process.env.password ?? null, episode: process.env.EPISODIC_EPISODE };
        console.log(JSON.stringify(seen));
      });`;
    const run = await runRunner({
      agent: nodeAgent(script),
      config: episodeConfig({ workspaceDir: await tempDir('ws'), episode: 3 }),
      prompt: 'Fix bug #12.',
      env: { GIT_TOKEN: 'ghp_topsecret123', GIT_USERNAME: 'robot', password: 'basic-auth-secret' },
    });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), {
      stdin: 'Fix bug #12.',
      token: null,
      user: null,
      password: null,
      episode: '3',
    });
    assert.doesNotMatch(run.stdout + run.stderr + run.terminationMessage, /topsecret|basic-auth-secret/);
  });

  it('reads and renders promptFile from the workspace', async () => {
    const ws = await tempDir('ws');
    await writeFile(path.join(ws, 'PROMPT.md'), 'Episode {{episode}} of {{maxEpisodes}} for {{task}}.');
    const run = await runRunner({
      agent: nodeAgent('process.stdin.pipe(process.stdout)'),
      config: episodeConfig({ workspaceDir: ws, episode: 2, promptFile: 'PROMPT.md' }),
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, 'Episode 2 of 5 for demo.');
  });

  it('rejects a bad config with a clear error, exit 2 and a fatal result', async () => {
    const missingField = await runRunner({
      agent: fakeClaude,
      config: { ...episodeConfig(), episode: 0, promptVia: 'carrier-pigeon' },
      prompt: 'x',
    });
    assert.equal(missingField.code, 2);
    assert.match(missingField.stderr, /invalid EPISODIC_EPISODE_CONFIG: .*episode: .*promptVia: /);
    assert.equal(missingField.result?.errorClass, 'fatal');
    assert.match(missingField.result?.message ?? '', /invalid EPISODIC_EPISODE_CONFIG/);
    assert.equal(missingField.stdout, '', 'the agent must not run');

    const notJson = await runRunner({ agent: fakeClaude, config: '{"task": ', prompt: 'x' });
    assert.equal(notJson.code, 2);
    assert.match(notJson.stderr, /EPISODIC_EPISODE_CONFIG is not valid JSON/);
    assert.equal(notJson.result?.errorClass, 'fatal');

    const unset = await runRunner({ agent: fakeClaude, prompt: 'x' });
    assert.equal(unset.code, 2);
    assert.match(unset.stderr, /EPISODIC_EPISODE_CONFIG is not set/);

    const noPrompt = await runRunner({
      agent: fakeClaude,
      config: episodeConfig({ workspaceDir: await tempDir('ws') }),
    });
    assert.equal(noPrompt.code, 2);
    assert.match(noPrompt.stderr, /EPISODIC_PROMPT is not set/);
  });

  it('spec.sandbox.mounts: a path the image lacks fails the episode naming the field; the agent never runs', async () => {
    const present = await tempDir('tools');
    const missing = await runRunner({
      agent: nodeAgent('console.log("ran")'),
      config: episodeConfig({ workspaceDir: await tempDir('ws'), sandboxMounts: [present, '/opt/no-such-tools'] }),
      prompt: 'x',
    });
    assert.equal(missing.code, 2);
    assert.equal(missing.result?.errorClass, 'fatal');
    assert.match(
      missing.result?.message ?? '',
      /^spec\.sandbox\.mounts\[1\]\.path: \/opt\/no-such-tools is not in the episode's image/,
    );
    assert.equal(missing.stdout, '', 'the agent must not run');
    const all = await runRunner({
      agent: nodeAgent('console.log("ran")'),
      config: episodeConfig({
        workspaceDir: await tempDir('ws'),
        sandboxMounts: [present],
        completion: { onExitZero: true },
      }),
      prompt: 'x',
    });
    assert.equal(all.code, 0, all.stderr);
    assert.equal(all.stdout, 'ran\n');
  });

  it('reports an unusable workspace directory as fatal instead of crashing', async () => {
    const file = path.join(await tempDir('ws'), 'a-file');
    await writeFile(file, '');
    const run = await runRunner({
      agent: fakeClaude,
      config: episodeConfig({ workspaceDir: path.join(file, 'ws') }),
      prompt: 'x',
    });
    assert.equal(run.code, 1);
    assert.equal(run.result?.errorClass, 'fatal');
    assert.match(run.result?.message ?? '', /^episode runner failed: ENOTDIR/);
  });

  it(`keeps the termination message within ${TERMINATION_MESSAGE_LIMIT} bytes even with a huge message`, async () => {
    // Control characters cost 6 bytes each in JSON: a 1000-character message would take ~6 KB.
    const promptFile = '\u0001'.repeat(3000);
    const run = await runRunner({
      agent: fakeClaude,
      config: episodeConfig({ workspaceDir: await tempDir('ws'), promptFile }),
    });
    assert.equal(run.code, 2);
    assert.ok(
      Buffer.byteLength(run.terminationMessage) <= TERMINATION_MESSAGE_LIMIT,
      `${run.terminationMessage.length}`,
    );
    assert.equal(run.result?.errorClass, 'fatal');
    assert.match(run.result?.message ?? '', /^cannot read promptFile \u0001+…$/);
  });

  it('stops the agent on SIGTERM and reports a cancelled episode', async () => {
    const ws = await tempDir('ws');
    const run = await runRunner({
      agent: nodeAgent('console.log("working"); setInterval(() => {}, 1000)'),
      config: episodeConfig({ workspaceDir: ws }),
      prompt: 'x',
      onSpawn: (child) => {
        child.stdout?.on('data', (d: Buffer) => {
          if (d.toString().includes('working')) child.kill('SIGTERM');
        });
      },
    });
    assert.equal(run.result?.cancelled, true);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /SIGTERM: stopping the agent/);
  });

  it('passes agent flags through without `--`, even ones that look like its own', async () => {
    const dir = await tempDir('argv');
    const agent = path.join(dir, 'print-argv.mjs');
    await writeFile(agent, 'console.log(JSON.stringify(process.argv.slice(2)));\n');
    const agentFlags = ['-p', '--log-file', 'not-ours.log', '--result-file', 'not-ours', '--help', '-v', '--', 'x'];
    const run = await runRunner({
      agent: [process.execPath, agent, ...agentFlags],
      config: episodeConfig({ workspaceDir: dir }),
      prompt: 'x',
      dashDash: false,
    });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), agentFlags);
    assert.equal(run.result?.exitCode, 0, "the result went to the runner's own --result-file");
  });

  it('keeps the agent output in --log-file as well', async () => {
    const dir = await tempDir('log');
    const logFile = path.join(dir, 'episode.log');
    await writeFile(logFile, 'older episode\n');
    const ws = await tempDir('ws');
    const run = await runRunner({
      agent: nodeAgent('console.log("hello from the agent")'),
      config: episodeConfig({ workspaceDir: ws }),
      prompt: 'x',
      logFile,
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, 'hello from the agent\n', 'only the new output goes to stdout');
    assert.match(await readFile(logFile, 'utf8'), /^older episode\nhello from the agent\n/);
  });
});

describe('episodic episode: evidence', () => {
  after(removeTempDirs);

  it('reports what the agent changed and the plan file, inside the termination message', async () => {
    const ws = await tempDir('ws');
    await writeFile(path.join(ws, 'PLAN.md'), '- [x] one\n- [ ] two\n');
    const run = await runRunner({
      agent: nodeAgent("require('fs').writeFileSync('PLAN.md', '- [x] one\\n- [x] two\\n'); console.log('done')"),
      config: episodeConfig({ workspaceDir: ws, output: 'text', checklist: 'PLAN.md' }),
      prompt: 'Work.',
    });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(
      [run.result?.evidence?.workspace?.kind, run.result?.evidence?.workspace?.changed],
      ['directory', true],
    );
    assert.deepEqual(run.result?.evidence?.checklist, { done: 2, total: 2, inProgress: 0, failed: 0, skipped: 0 });
  });

  it('fingerprints a failed episode and keeps the message within the termination message limit', async () => {
    const run = await runRunner({
      agent: nodeAgent("console.error('Error: cannot open /tmp/x/' + 'y'.repeat(3000) + ' code 17'); process.exit(3)"),
      config: episodeConfig({ workspaceDir: await tempDir('ws'), output: 'text' }),
      prompt: 'Work.',
    });
    assert.equal(run.code, 3);
    assert.ok(run.result?.evidence?.errorFingerprint, 'a fingerprint');
    assert.equal(run.result?.evidence?.workspace?.changed, false);
    assert.ok(Buffer.byteLength(run.terminationMessage ?? '') <= TERMINATION_MESSAGE_LIMIT);
  });

  it('does not complete on an echo of the prompt that names the sentinel (text and stream-json)', async () => {
    const prompt = 'Fix the failing test.\nWhen it passes, print <promise>DONE</promise> and nothing else.';
    const completion = { promise: 'DONE', onExitZero: false };
    const text = await runRunner({
      agent: [...fakeClaude.slice(0, 3), '--output-format', 'text'],
      config: episodeConfig({ workspaceDir: await tempDir('ws'), output: 'text', completion }),
      prompt,
      env: { FAKE_AGENT_MODE: 'echo-prompt' },
    });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /print <promise>DONE<\/promise> and nothing else/); // the echo was there
    assert.equal(text.result?.completion, undefined);
    const stream = await runRunner({
      agent: fakeClaude,
      config: episodeConfig({ workspaceDir: await tempDir('ws'), completion }),
      prompt,
      env: { FAKE_AGENT_MODE: 'echo-prompt' },
    });
    assert.equal(stream.code, 0, stream.stderr);
    assert.match(stream.stdout, /"type":"user".*<promise>DONE<\/promise>/);
    assert.equal(stream.result?.format, 'claude');
    assert.equal(stream.result?.completion, undefined);
  });

  it('reports RALPH_STATUS fields and, with completion.signals, completion keywords of the final answer', async () => {
    const answer =
      'All tasks are complete.\n---RALPH_STATUS---\nSTATUS: COMPLETE\nWORK_TYPE: TESTING\nEXIT_SIGNAL: false\n---END_RALPH_STATUS---';
    const run = await runRunner({
      agent: fakeClaude,
      config: episodeConfig({ workspaceDir: await tempDir('ws'), completion: { signals: { threshold: 60 } } }),
      prompt: 'Work.',
      env: { FAKE_AGENT_MODE: 'continue', FAKE_AGENT_TEXT: answer },
    });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(run.result?.evidence?.ralph, { status: 'COMPLETE', exitSignal: false, workType: 'TESTING' });
    assert.deepEqual(run.result?.evidence?.completionKeywords, ['all tasks complete']);
    assert.equal(run.result?.evidence?.workspace?.changed, false);
  });
});
