// Gates end to end in local mode (`episodic run`, real processes): a three-step pipeline whose implement step
// has a lint gate (a formatter as fix, then a check) and a test gate that fails once; the fix episode gets
// the gate's name and output in its prompt, its clean exit runs the gates again, they pass and the pipeline
// goes on. Gate runs land in the episode records and the log; the formatter's change stays in the workspace.
// And a step whose gate never passes fails the task with GateFailed, the check's output in the message; and a
// kill -9 of the controller during a fix episode: on restart no step is re-run and the gate state is kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  assertAllDead,
  FAKE_CLAUDE,
  NODE,
  REPO,
  readStatus,
  runCli,
  specDir,
  startCli,
  tempDir,
} from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const GATES = join(REPO, 'test/fixtures/gates');

function pipeline(record: string, gateRecord: string, maxFixEpisodes = 2) {
  return {
    prompt: undefined,
    backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 },
    agent: {
      command: [NODE, FAKE_CLAUDE, '-p', '--output-format', 'stream-json', '--verbose'],
      output: 'claude',
      env: [
        { name: 'FAKE_AGENT_RECORD', value: record },
        { name: 'GATE_RECORD', value: gateRecord },
      ],
    },
    limits: { maxEpisodes: 5, episodeTimeoutSeconds: 30 },
    steps: [
      { name: 'plan', prompt: 'Plan it.', completion: { promise: 'PLANNED' } },
      {
        name: 'implement',
        prompt: 'Implement the plan.',
        completion: { promise: 'BUILT' },
        gates: [
          { name: 'lint', fix: [NODE, join(GATES, 'format.mjs')], check: [NODE, join(GATES, 'lint.mjs')] },
          { name: 'test', check: [NODE, join(GATES, 'test-gate.mjs')], maxFixEpisodes, timeoutSeconds: 20 },
        ],
      },
      { name: 'review', prompt: 'Review it.', completion: { promise: 'APPROVED' } },
    ],
  };
}

function jsonLines<T>(file: string): T[] {
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as T);
}

interface GateRecord {
  number: number;
  step?: string;
  outcome: string;
  gates?: Array<{ name: string; fixExitCode?: number | null; exitCode: number | null; output?: string }>;
}

test('gates: the test gate fails once, a fix episode fixes it, the pipeline goes on', async () => {
  const record = join(tempDir('episodic-gates-record-'), 'runs.jsonl');
  const gateRecord = join(tempDir('episodic-gates-record-'), 'gates.jsonl');
  const dir = specDir([
    {
      name: 'feature',
      spec: pipeline(record, gateRecord),
      script: {
        episodes: {
          '1': { mode: 'success', promise: 'PLANNED' },
          '2': { mode: 'success', promise: 'BUILT', writeFiles: { 'src.txt': 'hello gates\n' } },
          '3': { mode: 'continue', writeFiles: { FIXED: 'yes\n' } },
          '4': { mode: 'success', promise: 'APPROVED' },
        },
      },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const s = readStatus(dir, 'feature')?.status;
  assert.equal(s?.phase, 'Succeeded', s?.message);
  assert.deepEqual(
    s?.steps?.map((x) => [x.name, x.phase, x.reason, x.episodes, x.gate]),
    [
      ['plan', 'Succeeded', 'PromiseDetected', 1, undefined],
      ['implement', 'Succeeded', 'GatesPassed', 2, undefined],
      ['review', 'Succeeded', 'PromiseDetected', 1, undefined],
    ],
  );

  const records = jsonLines<GateRecord>(join(dir, '.episodic/logs/default/feature/episodes.jsonl'));
  assert.deepEqual(
    records.map((r) => [r.number, r.step, r.outcome, r.gates?.map((g) => `${g.name}:${g.fixExitCode}:${g.exitCode}`)]),
    [
      [1, 'plan', 'succeeded', undefined],
      [2, 'implement', 'succeeded', ['lint:0:0', 'test:undefined:1']],
      [3, 'implement', 'continue', ['lint:0:0', 'test:undefined:0']],
      [4, 'review', 'succeeded', undefined],
    ],
  );
  assert.match(records[1].gates?.[1].output ?? '', /not ok 2 - adds numbers\n# pass 1\n# fail 1/);

  // The fix episode's prompt: the step's prompt, then the gate's section with the check's output.
  const prompts = jsonLines<{ stdin: string }>(record).map((r) => r.stdin);
  assert.equal(prompts[1], 'Implement the plan.');
  assert.match(prompts[2], /^Implement the plan\.\n[\s\S]*The gate "test" checked your work and failed/);
  assert.match(prompts[2], /not ok 2 - adds numbers/);
  assert.doesNotMatch(prompts[3], /gate/);

  // The formatter's change is kept; gates run in the workspace with the episode's environment.
  const ws = join(dir, 'ws', 'feature');
  assert.equal(readFileSync(join(ws, 'src.txt'), 'utf8'), 'HELLO GATES\n');
  const gateRuns = jsonLines<{ cwd: string; env: Record<string, string> }>(gateRecord);
  assert.deepEqual(
    gateRuns.map((g) => [g.env.EPISODIC_STEP, g.env.EPISODIC_EPISODE]),
    [
      ['implement', '2'],
      ['implement', '3'],
    ],
  );
  const log = readFileSync(join(dir, '.episodic/logs/default/feature/episode-2.log'), 'utf8');
  assert.match(log, /--- episodic: gate lint: fix passed ---/);
  assert.match(log, /--- episodic: gate test: check exited 1 ---/);
});

test('gates: a gate that never passes fails the task with GateFailed after maxFixEpisodes', async () => {
  const record = join(tempDir('episodic-gates-record-'), 'runs.jsonl');
  const gateRecord = join(tempDir('episodic-gates-record-'), 'gates.jsonl');
  const dir = specDir([
    {
      name: 'stuck',
      spec: pipeline(record, gateRecord, 1),
      script: {
        episodes: {
          '1': { mode: 'success', promise: 'PLANNED' },
          '2': { mode: 'success', promise: 'BUILT', writeFiles: { 'src.txt': 'x\n' } },
        },
        default: { mode: 'continue' },
      },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.notEqual(res.code, 0);
  const s = readStatus(dir, 'stuck')?.status;
  assert.equal(s?.phase, 'Failed');
  assert.equal(s?.reason, 'GateFailed');
  assert.match(s?.message ?? '', /^step 2\/3 implement: gate test exited 1 after 1 of 1 fix episodes: .*# fail 1$/s);
  assert.deepEqual(
    s?.steps?.map((x) => [x.name, x.phase]),
    [
      ['plan', 'Succeeded'],
      ['implement', 'Failed'],
      ['review', 'Pending'],
    ],
  );
  assert.equal(s?.episodes, 3);
});

test('gates: kill -9 during a fix episode; the restart re-runs no step and keeps the gate state', async () => {
  const record = join(tempDir('episodic-gates-record-'), 'runs.jsonl');
  const gateRecord = join(tempDir('episodic-gates-record-'), 'gates.jsonl');
  const pidFile = join(tempDir('episodic-gates-pids-'), 'pids.txt');
  const dir = specDir([
    {
      name: 'crashy',
      spec: pipeline(record, gateRecord),
      script: {
        episodes: {
          '1': { mode: 'success', promise: 'PLANNED', outputs: { PLAN_ID: 'p-1' } },
          '2': { mode: 'success', promise: 'BUILT', writeFiles: { 'src.txt': 'x\n' }, outputs: 'BUILD=b-2\n' },
          '3': { mode: 'sleep', sleepSeconds: 300, pidFile },
          '4': { mode: 'continue', writeFiles: { FIXED: 'yes\n' } },
          '5': { mode: 'success', promise: 'APPROVED' },
        },
      },
    },
  ]);
  const pids = () =>
    existsSync(pidFile) ? readFileSync(pidFile, 'utf8').split(/\s+/).filter(Boolean).map(Number) : [];
  const first = startCli(['run', dir]);
  await waitFor('fix episode 3 running with its tree', () => {
    const s = readStatus(dir, 'crashy')?.status;
    return s?.currentEpisode?.number === 3 && s.steps?.[1].gate !== undefined && pids().length >= 2;
  });
  first.child.kill('SIGKILL');
  await first.exited;
  const before = readStatus(dir, 'crashy')?.status;
  assert.deepEqual([before?.steps?.[1].gate?.name, before?.steps?.[1].gate?.fixEpisodes], ['test', 0]);
  assert.deepEqual(before?.outputs, { PLAN_ID: 'p-1', BUILD: 'b-2' }, 'published before the kill');
  await assertGetShowsGate(dir);

  const second = await runCli(['run', dir]);
  assert.equal(second.code, 0, second.stderr);
  await assertAllDead(pids(), 'the fix episode tree after the restart');
  const s = readStatus(dir, 'crashy')?.status;
  assert.equal(s?.phase, 'Succeeded', s?.message);
  assert.deepEqual(
    s?.steps?.map((x) => [x.name, x.phase, x.episodes]),
    [
      ['plan', 'Succeeded', 1],
      ['implement', 'Succeeded', 3],
      ['review', 'Succeeded', 1],
    ],
  );
  // No output lost: what plan and implement published before the kill is in status after the restart.
  assert.deepEqual(s?.outputs, { PLAN_ID: 'p-1', BUILD: 'b-2' });
  assert.deepEqual(
    s?.steps?.map((x) => x.outputs),
    [{ PLAN_ID: 'p-1' }, { BUILD: 'b-2' }, undefined],
  );
  const records = jsonLines<GateRecord>(join(dir, '.episodic/logs/default/crashy/episodes.jsonl'));
  assert.deepEqual(
    records.map((r) => [r.number, r.step, r.outcome]),
    [
      [1, 'plan', 'succeeded'],
      [2, 'implement', 'succeeded'],
      [3, 'implement', 'interrupted'],
      [4, 'implement', 'continue'],
      [5, 'review', 'succeeded'],
    ],
  );
  // The agent ran plan once and build once; the episode after the restart is still a fix episode for "test".
  const prompts = jsonLines<{ stdin: string; env: Record<string, string> }>(record);
  assert.deepEqual(
    prompts.map((p) => p.env.EPISODIC_STEP),
    ['plan', 'implement', 'implement', 'implement', 'review'],
  );
  assert.match(prompts[3].stdin, /The gate "test" checked your work and failed[\s\S]*not ok 2 - adds numbers/);
});

test('gates: a step finished by a complete checklist (no claim) runs its gates; a failing check gets a fix episode', async () => {
  const record = join(tempDir('episodic-gates-record-'), 'runs.jsonl');
  const gateRecord = join(tempDir('episodic-gates-record-'), 'gates.jsonl');
  const base = pipeline(record, gateRecord);
  const implement = {
    name: 'implement',
    prompt: 'Work through PLAN.md.',
    completion: { checklist: true },
    gates: [{ name: 'test', check: [NODE, join(GATES, 'test-gate.mjs')], maxFixEpisodes: 2 }],
  };
  const dir = specDir([
    {
      name: 'planned',
      spec: { ...base, progress: { checklist: 'PLAN.md' }, steps: [base.steps[0], implement, base.steps[2]] },
      script: {
        episodes: {
          '1': { mode: 'success', promise: 'PLANNED', writeFiles: { 'PLAN.md': '- [ ] a\n- [ ] b\n' } },
          '2': { mode: 'continue', writeFiles: { 'PLAN.md': '- [x] a\n- [x] b\n' } },
          '3': { mode: 'continue', writeFiles: { FIXED: 'yes\n' } },
          '4': { mode: 'success', promise: 'APPROVED' },
        },
      },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const s = readStatus(dir, 'planned')?.status;
  assert.equal(s?.phase, 'Succeeded', s?.message);
  assert.deepEqual(
    s?.steps?.map((x) => [x.name, x.phase, x.reason, x.episodes]),
    [
      ['plan', 'Succeeded', 'PromiseDetected', 1],
      ['implement', 'Succeeded', 'GatesPassed', 2],
      ['review', 'Succeeded', 'PromiseDetected', 1],
    ],
  );
  const records = jsonLines<GateRecord>(join(dir, '.episodic/logs/default/planned/episodes.jsonl'));
  assert.deepEqual(
    records.map((r) => [r.number, r.step, r.gates?.map((g) => `${g.name}:${g.exitCode}`)]),
    [
      [1, 'plan', undefined],
      [2, 'implement', ['test:1']],
      [3, 'implement', ['test:0']],
      [4, 'review', undefined],
    ],
  );
  const prompts = jsonLines<{ stdin: string }>(record).map((r) => r.stdin);
  assert.match(prompts[2], /The gate "test" checked your work and failed[\s\S]*not ok 2 - adds numbers/);
});

/** `episodic get` while crashy's implement step fixes its test gate: the GATE column and the --steps list. */
async function assertGetShowsGate(dir: string): Promise<void> {
  const list = await runCli(['get', dir]);
  assert.equal(list.code, 0, list.stderr);
  const [header, row] = list.stdout.trim().split('\n');
  assert.match(header, /\bSTEP\s+GATE\b/);
  assert.match(row, /\b2\/3 implement\s+test 0\/2\b/);
  // The task alone: its row, then its steps.
  const one = await runCli(['get', 'crashy', dir]);
  assert.equal(one.code, 0, one.stderr);
  assert.match(one.stdout, /\n\n#\s+STEP\s+PHASE\s+REASON\s+EPISODES\s+COST\s+GATE\n 1\s+plan\s+Succeeded\b/);
  assert.match(one.stdout, /\n\*2\s+implement\s+Running\s+\S+\s+2\s+\$0\.0123\s+test 0\/2\n/);
  const steps = await runCli(['get', 'crashy', dir, '--steps']);
  assert.equal(steps.code, 0, steps.stderr);
  const lines = steps.stdout.trim().split('\n');
  assert.match(lines[0], /^default\/crashy: Running \(EpisodeRunning\), step 2\/3 implement$/);
  assert.match(lines[1], /^#\s+STEP\s+PHASE\s+REASON\s+EPISODES\s+COST\s+GATE$/);
  assert.match(lines[2], /^ 1\s+plan\s+Succeeded\s+PromiseDetected\s+1\s+\$0\.0123\s*$/);
  assert.match(lines[3], /^\*2\s+implement\s+Running\s+\S+\s+2\s+\$0\.0123\s+test 0\/2$/);
  assert.match(lines[4], /^ 3\s+review\s+Pending\b/);
  const json = await runCli(['get', 'crashy', dir, '--steps', '-o', 'json']);
  const view = JSON.parse(json.stdout) as { step: { name: string }; steps: Array<{ gate?: { name: string } }> };
  assert.deepEqual([view.step.name, view.steps[1].gate?.name], ['implement', 'test']);
}
