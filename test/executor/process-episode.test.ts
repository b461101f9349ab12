// startProcessEpisode against real processes (the stand-in agents in test/agents): prompt delivery, env,
// cwd, logs, verify, spawn failures and cleanup after a normal exit.
import { strict as assert } from 'node:assert';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { startProcessEpisode } from '../../controller/executors/process/process-episode.ts';
import { readProcStat } from '../../controller/executors/process/process-tree.ts';
import { opsFilePath } from '../../controller/executors/process/ops-file.ts';
import { FAKE_CLAUDE, isGone, readPidFile, readRecords, request, sandboxPerTest } from './support.ts';
import { waitFor } from '../support/wait.ts';

const t = sandboxPerTest();

describe('prompt delivery, argv, env and cwd', () => {
  const prompt = 'Do the thing.\nLine two with "quotes" and {{braces}}.';

  test('promptVia stdin: prompt on stdin, argv untouched, EPISODIC_* and extra env set, cwd is the workspace', async () => {
    const record = join(t.box.root, 'record.jsonl');
    const running = await startProcessEpisode(
      request(t.box, { prompt, episode: 2, maxEpisodes: 7, env: { FAKE_AGENT_RECORD: record, CUSTOM: 'yes' } }),
    );
    assert.equal(typeof running.pid, 'number');
    const result = await running.result;
    assert.equal(result.exitCode, 0);
    const [run] = readRecords(record);
    assert.equal(run.stdin, prompt);
    assert.deepEqual(run.argv, ['-p', '--output-format', 'stream-json', '--verbose']);
    assert.equal(run.cwd, t.box.ws);
    assert.equal(run.env.EPISODIC_TASK, 'demo');
    assert.equal(run.env.EPISODIC_NAMESPACE, 'default');
    assert.equal(run.env.EPISODIC_EPISODE, '2');
    assert.equal(run.env.EPISODIC_MAX_EPISODES, '7');
    assert.equal(run.env.EPISODIC_PROMPT_FILE, undefined);
    assert.equal(run.env.CUSTOM, 'yes');
    assert.ok(run.env.EPISODIC_PROCESS_TREE, 'the tree marker is inherited');
  });

  test('promptVia argument: prompt is the last argv element, stdin is empty', async () => {
    const record = join(t.box.root, 'record.jsonl');
    const result = await (
      await startProcessEpisode(request(t.box, { prompt, promptVia: 'argument', env: { FAKE_AGENT_RECORD: record } }))
    ).result;
    assert.equal(result.exitCode, 0);
    const [run] = readRecords(record);
    assert.deepEqual(run.argv, ['-p', '--output-format', 'stream-json', '--verbose', prompt]);
    assert.equal(run.stdin, '');
  });

  test('promptVia file: EPISODIC_PROMPT_FILE points next to the log, outside the workspace', async () => {
    const record = join(t.box.root, 'record.jsonl');
    const result = await (
      await startProcessEpisode(request(t.box, { prompt, promptVia: 'file', env: { FAKE_AGENT_RECORD: record } }))
    ).result;
    assert.equal(result.exitCode, 0);
    const [run] = readRecords(record);
    const file = run.env.EPISODIC_PROMPT_FILE;
    assert.equal(dirname(file), dirname(t.box.logFile));
    assert.ok(!file.startsWith(t.box.ws));
    assert.equal(run.promptFileContent, prompt);
    assert.equal(run.stdin, '');
    assert.deepEqual(run.argv, ['-p', '--output-format', 'stream-json', '--verbose']);
  });
});

describe('result and log', () => {
  test('a successful claude episode: completion, cost, tokens, message, duration; output in the log', async () => {
    const running = await startProcessEpisode(request(t.box));
    assert.equal(readProcStat(running.pid!)?.pgid, running.pid, 'the agent leads its own process group');
    assert.match(running.pidStartTime ?? '', /^\d+$/);
    const result = await running.result;
    assert.equal(result.exitCode, 0);
    assert.equal(result.format, 'claude');
    assert.equal(result.completion, 'promise');
    assert.equal(result.errorClass, 'none');
    assert.equal(result.costUSD, 0.0123);
    assert.equal(result.tokens.input, 1200);
    assert.equal(result.timedOut, false);
    assert.equal(result.cancelled, false);
    assert.match(result.message ?? '', /COMPLETE/);
    assert.ok((result.durationMs ?? -1) >= 0);
    const log = readFileSync(t.box.logFile, 'utf8');
    assert.match(log, /"type":"system","subtype":"init"/);
    assert.match(log, /"type":"result"/);
  });

  test('the log is appended to, and stderr lands in it too', async () => {
    await (await startProcessEpisode(request(t.box, { env: { FAKE_AGENT_MODE: 'continue' } }))).result;
    const result = await (await startProcessEpisode(request(t.box, { env: { FAKE_AGENT_MODE: 'fail' } }))).result;
    assert.equal(result.exitCode, 1);
    const log = readFileSync(t.box.logFile, 'utf8');
    assert.match(log, /more remain/);
    assert.match(log, /^\[stderr\] Error: the agent crashed/m);
  });

  test('the agent and verify write straight into files, not pipes; the files are gone once the episode ends', async () => {
    // Prints what its stdout and stderr are, and a completion claim so that verify runs and does the same.
    const probe = `const fs = require('node:fs'); console.log(JSON.stringify({ file: [1, 2].map((fd) => fs.fstatSync(fd).isFile()) }), process.argv[1]); console.error('to stderr');`;
    const result = await (
      await startProcessEpisode(
        request(t.box, {
          argv: [process.execPath, '-e', probe, '<promise>COMPLETE</promise>'],
          verify: [process.execPath, '-e', probe, 'verify'],
          analyzer: { format: 'text', promise: 'COMPLETE' },
        }),
      )
    ).result;
    assert.equal(result.verifyExitCode, 0);
    const log = readFileSync(t.box.logFile, 'utf8');
    assert.match(log, /^\{"file":\[true,true\]\} <promise>COMPLETE<\/promise>$/m, log);
    assert.match(log, /^\{"file":\[true,true\]\} verify$/m, log);
    assert.equal(log.match(/^\[stderr\] to stderr$/gm)?.length, 2, log);
    assert.deepEqual(
      readdirSync(dirname(t.box.logFile)).filter((f) => /std(out|err)$/.test(f)),
      [],
      'no spool file is left',
    );
  });

  test('output reaches the log while the agent runs', async () => {
    const go = join(t.box.root, 'go');
    const script = `console.log('first line'); const fs = require('node:fs'); const wait = () => fs.existsSync(${JSON.stringify(go)}) ? process.exit(0) : setTimeout(wait, 20); wait();`;
    const running = await startProcessEpisode(
      request(t.box, { argv: [process.execPath, '-e', script], analyzer: { format: 'text', promise: 'COMPLETE' } }),
    );
    // The agent exits only after this: a log written after exit would never show the line.
    await waitFor(
      'the first line in the log',
      () => existsSync(t.box.logFile) && readFileSync(t.box.logFile, 'utf8').includes('first line\n'),
    );
    writeFileSync(go, '');
    assert.equal((await running.result).exitCode, 0);
  });

  test('stdout stays whole JSON lines in the log, with stderr lines marked between them and nothing lost', async () => {
    // Each JSON line is written in two pieces with stderr (a whole line, then a partial one) in between.
    const script = `
      const pause = () => new Promise((r) => setTimeout(r, 5));
      (async () => {
        for (let i = 0; i < 20; i++) {
          process.stdout.write('{"type":"assistant","n":' + i);
          await pause();
          process.stderr.write('warning ' + i + '\\nhalf ');
          await pause();
          process.stdout.write(',"pad":"' + 'x'.repeat(100) + '"}\\n');
          process.stderr.write('of ' + i + '\\n');
        }
        process.stdout.write('{"type":"result","subtype":"success","is_error":false,"result":"<promise>COMPLETE</promise>"}\\n');
        process.stderr.write('no newline at the end');
      })();`;
    const result = await (
      await startProcessEpisode(
        request(t.box, { argv: [process.execPath, '-e', script], analyzer: { format: 'auto', promise: 'COMPLETE' } }),
      )
    ).result;
    assert.equal(result.format, 'claude', 'the analyzer read stdout apart from stderr');
    assert.equal(result.completion, 'promise');
    const all = readFileSync(t.box.logFile, 'utf8').split('\n');
    assert.equal(all.pop(), '', 'the log ends with a whole line');
    // Our note of how the agent ended, on a line of its own (what a restarted controller reads back).
    assert.deepEqual(all.slice(-2), ['', '--- episodic: agent exited 0 ---']);
    const lines = all.slice(0, -2);
    const stderr = lines.filter((l) => l.startsWith('[stderr] ')).map((l) => l.slice('[stderr] '.length));
    const stdout = lines.filter((l) => !l.startsWith('[stderr] ')).map((l) => JSON.parse(l) as { n?: number });
    assert.deepEqual(
      stdout.slice(0, 20).map((o) => o.n),
      [...Array(20).keys()],
    );
    assert.equal(stdout.length, 21);
    assert.deepEqual(stderr, [
      ...[...Array(20).keys()].flatMap((i) => [`warning ${i}`, `half of ${i}`]),
      'no newline at the end',
    ]);
  });

  test('long lines reach the log in full, and a stderr line waits for the end of a long stdout line', async () => {
    const script = `
      const a = 'a'.repeat(600_000);
      process.stdout.write(a, () => setTimeout(() => {
        process.stderr.write('warning in the middle\\n', () => setTimeout(() => {
          process.stdout.write(a + '\\n' + 'b'.repeat(100_000));
          process.stderr.write('c'.repeat(100_000));
        }, 50));
      }, 50));`;
    await (
      await startProcessEpisode(
        request(t.box, { argv: [process.execPath, '-e', script], analyzer: { format: 'text', promise: 'COMPLETE' } }),
      )
    ).result;
    const lines = readFileSync(t.box.logFile, 'utf8').split('\n');
    assert.ok(lines[0] === 'a'.repeat(1_200_000), `the long stdout line is whole and first (${lines[0].length} bytes)`);
    assert.equal(lines[1], '[stderr] warning in the middle');
    const rest = lines.slice(2).filter((l) => !l.startsWith('--- episodic: '));
    assert.equal(rest.join('').match(/b/g)?.length, 100_000);
    assert.equal(rest.join('').match(/c/g)?.length, 100_000);
    assert.ok(
      rest.filter((l) => l.includes('c')).every((l) => /^\[stderr\] c+$/.test(l)),
      'stderr stays in marked lines',
    );
  });

  test('a command that does not exist is a fatal result, not a rejection', async () => {
    const running = await startProcessEpisode(request(t.box, { argv: ['episodic-no-such-agent-xyz', '-p'] }));
    assert.equal(running.pid, undefined);
    running.cancel(); // harmless
    const result = await running.result;
    assert.equal(result.exitCode, null);
    assert.equal(result.errorClass, 'fatal');
    assert.match(result.message ?? '', /episodic-no-such-agent-xyz/);
    assert.match(readFileSync(t.box.logFile, 'utf8'), /cannot start episodic-no-such-agent-xyz/);
  });

  test('an empty argv and an uncreatable log directory are fatal results too', async () => {
    const empty = await (await startProcessEpisode(request(t.box, { argv: [] }))).result;
    assert.equal(empty.errorClass, 'fatal');
    writeFileSync(join(t.box.root, 'blocker'), '');
    const noLog = await (
      await startProcessEpisode(request(t.box, { logFile: join(t.box.root, 'blocker', 'x', 'e.log') }))
    ).result;
    assert.equal(noLog.errorClass, 'fatal');
    assert.match(noLog.message ?? '', /cannot prepare episode/);
  });

  test('descendants left running after a normal exit are killed, even ones holding the output pipe', async () => {
    const pidFile = join(t.box.root, 'pids');
    const started = Date.now();
    const running = await startProcessEpisode(
      request(t.box, {
        env: { FAKE_AGENT_MODE: 'sleep', FAKE_AGENT_SLEEP_SECONDS: '0.5', FAKE_AGENT_PID_FILE: pidFile },
      }),
    );
    const result = await running.result;
    t.leftovers = await readPidFile(pidFile);
    assert.equal(result.exitCode, 0);
    assert.equal(result.timedOut, false);
    assert.ok(Date.now() - started < 10_000, 'did not wait for the sleepers');
    for (const pid of t.leftovers) assert.ok(isGone(pid), `pid ${pid} survived`);
  });
});

describe('verify', () => {
  const verifyScript = [
    "const fs = require('node:fs');",
    "console.log('verify-output-marker task=' + process.env.EPISODIC_TASK);",
    "if (!fs.existsSync('done.txt')) { console.error('tests failing: done.txt missing'); process.exit(3); }",
  ].join('\n');
  const verify = [process.execPath, '-e', verifyScript];

  test('runs after a completion signal in the workspace with the same env; pass is recorded', async () => {
    const script = { default: { mode: 'success', writeFiles: { 'done.txt': 'ok' } } };
    writeFileSync(join(t.box.ws, '.fake-agent.json'), JSON.stringify(script));
    const result = await (await startProcessEpisode(request(t.box, { verify }))).result;
    assert.equal(result.completion, 'promise');
    assert.equal(result.verifyExitCode, 0);
    assert.match(readFileSync(t.box.logFile, 'utf8'), /verify-output-marker task=demo/);
  });

  test('a failing verify is recorded with its exit code and last output line', async () => {
    const result = await (await startProcessEpisode(request(t.box, { verify }))).result;
    assert.equal(result.completion, 'promise');
    assert.equal(result.verifyExitCode, 3);
    assert.match(result.message ?? '', /verify exited 3: tests failing: done.txt missing/);
    assert.match(readFileSync(t.box.logFile, 'utf8'), /tests failing/);
  });

  test("a failing verify's message names its last stderr line, though stdout printed after it", async () => {
    const script = [
      "console.error('why: the build is red');",
      "setTimeout(() => { console.log('summary line on stdout'); process.exit(4); }, 50);",
    ].join('\n');
    const result = await (await startProcessEpisode(request(t.box, { verify: [process.execPath, '-e', script] })))
      .result;
    assert.equal(result.verifyExitCode, 4);
    assert.match(result.message ?? '', /verify exited 4: why: the build is red/);
  });

  test('does not run without a completion claim; runs after exit 0 when onExitZero', async () => {
    const noClaim = await (await startProcessEpisode(request(t.box, { verify, env: { FAKE_AGENT_MODE: 'continue' } })))
      .result;
    assert.equal(noClaim.verifyExitCode, undefined);
    const exitZero = await (
      await startProcessEpisode(request(t.box, { verify, onExitZero: true, env: { FAKE_AGENT_MODE: 'continue' } }))
    ).result;
    assert.equal(exitZero.completion, undefined);
    assert.equal(exitZero.verifyExitCode, 3);
  });

  test('does not run after an agent error, even with onExitZero and exit code 0', async () => {
    const result = await (
      await startProcessEpisode(
        request(t.box, { verify, onExitZero: true, env: { FAKE_AGENT_MODE: 'auth', FAKE_AGENT_EXIT_CODE: '0' } }),
      )
    ).result;
    assert.equal(result.agentError, true);
    assert.equal(result.verifyExitCode, undefined);
  });

  test('a verify command that does not exist counts as a failed verify', async () => {
    const result = await (await startProcessEpisode(request(t.box, { verify: ['episodic-no-such-verify-xyz'] })))
      .result;
    assert.equal(result.verifyExitCode, null);
    assert.match(result.message ?? '', /verify failed: cannot start episodic-no-such-verify-xyz/);
  });

  test('cancel while verify runs kills it', async () => {
    const pidFile = join(t.box.root, 'verify.pid');
    const slowVerify = [
      process.execPath,
      '-e',
      `require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setTimeout(() => {}, 60000)`,
    ];
    const running = await startProcessEpisode(request(t.box, { verify: slowVerify }));
    await waitFor('verify to start', () => existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '');
    const verifyPid = Number(readFileSync(pidFile, 'utf8'));
    t.leftovers = [verifyPid];
    running.cancel();
    const result = await running.result;
    assert.equal(result.cancelled, true);
    assert.ok(isGone(verifyPid));
  });
});

describe('$EPISODIC_OPS', () => {
  test('the agent appends ops to $EPISODIC_OPS (next to the log, not in the workspace); the result carries them and the rejected lines', async () => {
    const agent = join(dirname(FAKE_CLAUDE), 'ops-agent.mjs');
    const prompt = [
      '## Task',
      '@op {"op":"set","key":"plan","value":"v1"}',
      '@raw {"op":"nope"}',
      '@op {"op":"sleep","seconds":5}',
    ].join('\n');
    // A leftover of an earlier run of the same episode number is not this episode's.
    mkdirSync(dirname(t.box.logFile), { recursive: true });
    writeFileSync(opsFilePath(t.box.logFile), '{"op":"del","key":"stale"}\n');
    const result = await (
      await startProcessEpisode(
        request(t.box, { argv: [process.execPath, agent], prompt, analyzer: { format: 'text', promise: 'COMPLETE' } }),
      )
    ).result;
    assert.equal(result.exitCode, 0);
    assert.deepEqual(result.ops, [
      { op: 'set', key: 'plan', value: 'v1' },
      { op: 'sleep', seconds: 5 },
    ]);
    assert.deepEqual(result.opsRejected, [
      { line: 2, message: 'unknown op "nope" (known: push, spawn, send, set, del, sleep)' },
    ]);
    assert.ok(existsSync(opsFilePath(t.box.logFile)));
    assert.ok(!opsFilePath(t.box.logFile).startsWith(t.box.ws));
  });

  test('an episode that writes no ops has none in its result', async () => {
    const result = await (await startProcessEpisode(request(t.box))).result;
    assert.equal(result.ops, undefined);
    assert.equal(result.opsRejected, undefined);
  });
});
