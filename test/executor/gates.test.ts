// A step's gates as startProcessEpisode runs them (real processes): in order after a confirmed completion
// claim or a clean exit that completes the plan under completion.checklist, fix then check, stopping at the
// first failing check; in a fix episode after any clean exit; never after a failed agent or a failed verify;
// a check past timeoutSeconds has its whole tree killed; a cancel while a gate runs kills it and starts
// nothing more.
import { strict as assert } from 'node:assert';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { GateRunSchema } from '../../controller/api/gates.ts';
import type { Gate } from '../../controller/api/gates.ts';
import { startProcessEpisode } from '../../controller/executors/process/process-episode.ts';
import { isGone, readRecords, request, sandboxPerTest } from './support.ts';
import { waitFor } from '../support/wait.ts';

const t = sandboxPerTest();
const FIXTURES = resolve(import.meta.dirname, '../fixtures/gates');
const node = (script: string) => [process.execPath, join(FIXTURES, script)];
const gate = (over: Partial<Gate> & Pick<Gate, 'name' | 'check'>): Gate => ({
  maxFixEpisodes: 3,
  timeoutSeconds: 30,
  ...over,
});
const GATES = [
  gate({ name: 'lint', fix: node('format.mjs'), check: node('lint.mjs') }),
  gate({ name: 'test', check: node('test-gate.mjs') }),
  gate({ name: 'never', check: [process.execPath, '-e', 'process.exit(9)'] }),
];
const summary = (runs: unknown[] | undefined) =>
  runs?.map((r) => {
    const g = GateRunSchema.parse(r);
    return `${g.name}:${g.fixExitCode ?? '-'}:${g.exitCode}`;
  });

describe('gates in a process episode', () => {
  test('after a completion claim: in order, fix then check, the fix kept, stopping at the first failing check', async () => {
    writeFileSync(join(t.box.ws, 'src.txt'), 'lower\n');
    const gateRecord = join(t.box.root, 'gates.jsonl');
    const result = await (
      await startProcessEpisode(request(t.box, { gates: GATES, env: { GATE_RECORD: gateRecord, STEP_ENV: 'x' } }))
    ).result;
    assert.equal(result.completion, 'promise');
    assert.deepEqual(summary(result.gates), ['lint:0:0', 'test:-:1']);
    assert.match(result.gates?.[1].output ?? '', /not ok 2 - adds numbers/);
    assert.ok((result.gates?.[1].durationMs ?? -1) >= 0);
    assert.equal(readFileSync(join(t.box.ws, 'src.txt'), 'utf8'), 'LOWER\n');
    const [run] = readRecords(gateRecord);
    assert.equal(run.cwd, t.box.ws);
    assert.equal(run.env.EPISODIC_TASK, 'demo');
    assert.ok(run.env.EPISODIC_PROCESS_TREE, 'gates carry the tree marker, so a restart can kill them');
    const log = readFileSync(t.box.logFile, 'utf8');
    assert.match(log, /formatted src\.txt/);
    assert.match(log, /--- episodic: gate test: check exited 1 ---/);
  });

  test('no gates without a claim; a fix episode runs them after a clean exit; never after a failed agent', async () => {
    writeFileSync(join(t.box.ws, 'src.txt'), 'A\n');
    writeFileSync(join(t.box.ws, 'FIXED'), '');
    const gates = GATES.slice(0, 2);
    const noClaim = await (await startProcessEpisode(request(t.box, { gates, env: { FAKE_AGENT_MODE: 'continue' } })))
      .result;
    assert.equal(noClaim.gates, undefined);
    const fix = await (
      await startProcessEpisode(request(t.box, { gates, fixEpisode: true, env: { FAKE_AGENT_MODE: 'continue' } }))
    ).result;
    assert.deepEqual(summary(fix.gates), ['lint:0:0', 'test:-:0']);
    const failed = await (
      await startProcessEpisode(request(t.box, { gates, fixEpisode: true, env: { FAKE_AGENT_MODE: 'fail' } }))
    ).result;
    assert.notEqual(failed.exitCode, 0);
    assert.equal(failed.gates, undefined);
  });

  test('a clean exit that leaves the plan complete under completion.checklist runs the gates without a claim', async () => {
    const gates = GATES.slice(1, 2);
    const run = async (plan: string, completes: boolean) => {
      writeFileSync(join(t.box.ws, 'PLAN.md'), plan);
      const checklist = { file: 'PLAN.md', completes };
      const env = { FAKE_AGENT_MODE: 'continue' };
      return (await (await startProcessEpisode(request(t.box, { gates, env, checklist }))).result).gates;
    };
    assert.deepEqual(summary(await run('- [x] a\n- [S] b\n', true)), ['test:-:1']);
    assert.equal(await run('- [x] a\n- [ ] b\n', true), undefined, 'a pending item: the rule is not met');
    assert.equal(await run('- [x] a\n', false), undefined, 'without completion.checklist the plan completes nothing');
  });

  test('a failing verify: the gates do not run', async () => {
    const verify = [process.execPath, '-e', 'process.exit(4)'];
    const result = await (await startProcessEpisode(request(t.box, { gates: GATES, verify }))).result;
    assert.equal(result.verifyExitCode, 4);
    assert.equal(result.gates, undefined);
  });

  test('a check past timeoutSeconds: timed out, its whole tree killed', async () => {
    const pidFile = join(t.box.root, 'gate.pids');
    const slow = [gate({ name: 'test', check: node('test-gate.mjs'), timeoutSeconds: 1 })];
    const env = { GATE_SLEEP_SECONDS: '60', GATE_PID_FILE: pidFile };
    const started = Date.now();
    const result = await (await startProcessEpisode(request(t.box, { gates: slow, env }))).result;
    const pids = readFileSync(pidFile, 'utf8').split('\n').filter(Boolean).map(Number);
    t.leftovers = pids;
    assert.ok(Date.now() - started < 20_000, 'the gate was stopped long before it would have finished');
    assert.equal(result.gates?.[0].timedOut, true);
    assert.equal(result.gates?.[0].exitCode, null);
    assert.equal(pids.length, 2);
    await waitFor('the gate and its child to be gone', () => pids.every(isGone));
    assert.match(readFileSync(t.box.logFile, 'utf8'), /gate test: check timed out after 1s; process tree killed/);
  });

  test('cancel while a gate runs: it is killed and no later gate starts', async () => {
    const pidFile = join(t.box.root, 'gate.pids');
    const gates = [
      gate({ name: 'test', check: node('test-gate.mjs') }),
      gate({ name: 'after', check: [process.execPath, '-e', 'require("fs").writeFileSync("AFTER", "")'] }),
    ];
    const running = await startProcessEpisode(
      request(t.box, { gates, env: { GATE_SLEEP_SECONDS: '60', GATE_PID_FILE: pidFile } }),
    );
    await waitFor(
      'the gate to start',
      () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').split('\n').length > 2,
    );
    const pids = readFileSync(pidFile, 'utf8').split('\n').filter(Boolean).map(Number);
    t.leftovers = pids;
    running.cancel();
    const result = await running.result;
    assert.equal(result.cancelled, true);
    assert.deepEqual(summary(result.gates), ['test:-:null']);
    await waitFor('the gate and its child to be gone', () => pids.every(isGone));
    assert.equal(existsSync(join(t.box.ws, 'AFTER')), false);
  });
});
