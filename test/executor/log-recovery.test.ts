// An episode's end read back from its log (what a restarted controller does): the log's layout as
// EpisodeLog writes it, with real agent outputs from the fixtures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { recoverEpisodeFromLog } from '../../controller/executors/process/episode-log-recovery.ts';
import type { LogRecoveryOptions } from '../../controller/executors/process/episode-log-recovery.ts';

const fixture = (name: string) => readFileSync(join(import.meta.dirname, '../fixtures/agent-outputs', name), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'episodic-log-recovery-'));
let n = 0;
async function recover(log: string, opts: Partial<LogRecoveryOptions> = {}) {
  const file = join(dir, `episode-${++n}.log`);
  writeFileSync(file, log);
  return recoverEpisodeFromLog(file, { analyzer: { format: 'auto', promise: 'COMPLETE' }, onExitZero: false, ...opts });
}
const note = (text: string) => `\n--- episodic: ${text} ---\n`;
const stderr = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((l) => `[stderr] ${l}\n`)
    .join('');

test('a claude result without an exit note: finished, exit code 0 inferred, the real completion and cost', async () => {
  const r = await recover(fixture('claude-stream-success.jsonl'));
  assert.equal(r.how, 'result');
  assert.deepEqual(
    [r.result.interrupted, r.result.exitCode, r.result.completion, r.result.format],
    [false, 0, 'promise', 'claude'],
  );
  assert.ok(r.result.costUSD > 0, `cost ${r.result.costUSD}`);
  assert.ok(r.finishedAt);
});

test('an error result without an exit note: exit code 1 inferred, classified as the CLI would be (529 → transient)', async () => {
  const r = await recover(fixture('claude-stream-overloaded.jsonl'));
  assert.deepEqual(
    [r.how, r.result.exitCode, r.result.errorClass, r.result.interrupted],
    ['result', 1, 'transient', false],
  );
});

test('codex and gemini final events count as finished', async () => {
  assert.deepEqual(
    ((r) => [r.how, r.result.format, r.result.completion])(await recover(fixture('codex-exec-success.jsonl'))),
    ['result', 'codex', 'promise'],
  );
  assert.deepEqual(((r) => [r.how, r.result.format])(await recover(fixture('gemini-stream.jsonl'))), [
    'result',
    'gemini',
  ]);
});

test('text output: finished only with an exit note; stderr lines are read as stderr', async () => {
  assert.deepEqual(((r) => [r.how, r.result.interrupted])(await recover('did some work\n')), ['unfinished', true]);
  const done = await recover(`did some work <promise>COMPLETE</promise>\n${note('agent exited 0')}`);
  assert.deepEqual([done.how, done.result.exitCode, done.result.completion], ['exited', 0, 'promise']);
  const limited = await recover(`${stderr(fixture('claude-text-usage-limit.txt'))}${note('agent exited 1')}`, {
    analyzer: { format: 'claude', promise: 'COMPLETE' },
  });
  assert.deepEqual([limited.result.exitCode, limited.result.errorClass], [1, 'usageLimit']);
  const killed = await recover(`working\n${note('agent killed by SIGKILL')}`);
  assert.deepEqual([killed.result.exitCode, killed.result.signal, killed.result.interrupted], [null, 'SIGKILL', false]);
});

test('a completion claim needs its verify verdict in the log; verify output is not the agent’s', async () => {
  const claim = fixture('claude-stream-success.jsonl') + note('agent exited 0');
  const verify = { verify: ['npm', 'test'] };
  const pending = await recover(`${claim}${note('verify ["npm","test"]')}running tests\n`, verify);
  assert.deepEqual([pending.how, pending.result.interrupted], ['unfinished', true]);
  assert.ok(pending.result.costUSD > 0, 'the spend is kept');
  const passed = await recover(
    `${claim}${note('verify ["npm","test"]')}ok <promise>NOPE</promise>${note('verify passed')}`,
    verify,
  );
  assert.deepEqual(
    [passed.result.verifyExitCode, passed.result.completion, passed.result.interrupted],
    [0, 'promise', false],
  );
  const failed = await recover(
    `${claim}${note('verify ["npm","test"]')}1 failing\n${note('verify exited 1: 1 failing')}`,
    verify,
  );
  assert.equal(failed.result.verifyExitCode, 1);
});

test('timeout and cancel notes; a missing log; agent output that imitates a note is read as output', async () => {
  const timedOut = await recover(
    `{"type":"system","subtype":"init"}\n${note('agent killed by SIGTERM')}${note('timed out after 30s; process tree killed')}`,
  );
  assert.equal(timedOut.result.timedOut, true);
  const cancelled = await recover(`x\n${note('agent killed by SIGTERM')}${note('cancelled; process tree killed')}`);
  assert.equal(cancelled.result.cancelled, true);
  const missing = await recoverEpisodeFromLog(join(dir, 'nope.log'), {
    analyzer: { format: 'auto', promise: 'COMPLETE' },
    onExitZero: false,
  });
  assert.deepEqual([missing.how, missing.result.interrupted, missing.result.costUSD], ['no-log', true, 0]);
  const imitation = await recover('--- episodic: something else ---\n--- episodic: not closed\n');
  assert.equal(imitation.how, 'unfinished');
});

test('with completion.signals a score claim (completion keywords) needs its verify verdict too, and keeps it', async () => {
  const claim = `all tasks complete\n${note('agent exited 0')}`;
  const opts = { verify: ['npm', 'test'], analyzer: { format: 'auto' as const, promise: 'COMPLETE', signals: true } };
  const pending = await recover(`${claim}${note('verify ["npm","test"]')}running tests\n`, opts);
  assert.deepEqual([pending.how, pending.result.interrupted], ['unfinished', true]);
  const passed = await recover(`${claim}${note('verify ["npm","test"]')}ok\n${note('verify passed')}`, opts);
  assert.deepEqual(
    [passed.result.verifyExitCode, passed.result.evidence?.completionKeywords, passed.result.interrupted],
    [0, ['all tasks complete'], false],
  );
});

test('spool files a dead controller left are folded into the log: the whole output counted once, then removed', async () => {
  const file = join(dir, 'episode-folded.log');
  const output = fixture('codex-exec-success.jsonl');
  const opts: LogRecoveryOptions = {
    analyzer: { format: 'auto', promise: 'COMPLETE', pricing: { inputPerMTok: 1, outputPerMTok: 1 } },
    onExitZero: false,
  };
  const whole = await recover(output, opts);
  // The controller had logged the output (its usage too) but died before it removed the spools.
  const logged = output;
  writeFileSync(file, logged);
  const spool = { stdout: `${file}.agent-stdout`, stderr: `${file}.agent-stderr`, verify: `${file}.verify-stdout` };
  writeFileSync(spool.stdout, output);
  writeFileSync(spool.stderr, 'a warning\nno newline');
  writeFileSync(spool.verify, 'verify output of no verdict');
  const folded = await recoverEpisodeFromLog(file, opts);
  assert.deepEqual(
    [folded.how, folded.result.completion, folded.result.costUSD, folded.result.tokens],
    ['result', 'promise', whole.result.costUSD, whole.result.tokens],
    'the partial copy in the log is not counted twice',
  );
  assert.deepEqual(
    Object.values(spool).filter((f) => existsSync(f)),
    [],
  );
  const log = readFileSync(file, 'utf8');
  assert.ok(
    log.startsWith(
      `${logged}${note('the controller stopped before it had logged all of the agent output; all of it follows')}${output}`,
    ),
    log,
  );
  assert.ok(log.endsWith('[stderr] a warning\n[stderr] no newline\n'), log);
  // A second restart (the first died before recording the episode) reads the folded log alike.
  const again = await recoverEpisodeFromLog(file, opts);
  assert.deepEqual([again.how, again.result.costUSD], ['result', whole.result.costUSD]);
});

test('a large stdout spool is folded whole before the stderr spool (two read streams would interleave)', async () => {
  const file = join(dir, 'episode-folded-large.log');
  const output = fixture('codex-exec-success.jsonl');
  const big = `${'{"type":"noise"}\n'.repeat(60_000)}${output}`; // ~1 MiB: many read chunks
  writeFileSync(file, '');
  writeFileSync(`${file}.agent-stdout`, big);
  writeFileSync(`${file}.agent-stderr`, 'late warning\n');
  await recoverEpisodeFromLog(file, { analyzer: { format: 'auto', promise: 'COMPLETE' }, onExitZero: false });
  const log = readFileSync(file, 'utf8');
  assert.ok(log.includes(big), 'the stdout spool is contiguous in the log');
  assert.ok(log.endsWith('[stderr] late warning\n'));
});

test('spool files without a log: the log is made from them', async () => {
  const file = join(dir, 'episode-spool-only.log');
  writeFileSync(`${file}.agent-stdout`, fixture('claude-stream-success.jsonl'));
  writeFileSync(`${file}.agent-stderr`, '');
  const r = await recoverEpisodeFromLog(file, { analyzer: { format: 'auto', promise: 'COMPLETE' }, onExitZero: false });
  assert.deepEqual([r.how, r.result.completion], ['result', 'promise']);
  assert.ok(r.result.costUSD > 0);
  assert.match(readFileSync(file, 'utf8'), /"type":"result"/);
});
