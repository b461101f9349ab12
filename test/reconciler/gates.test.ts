// Gates (spec.steps[].gates) in the pure reconciler, pass by pass as the loop drives it: a step whose
// completion rule is met advances only once every gate's check passed; a failing check starts fix episodes
// (status.steps[].gate) until the gates pass or maxFixEpisodes is spent (GateFailed); a timed-out check
// counts as failing; outages and cancels do not spend fix episodes; maxEpisodes does not stop them; a breaker
// that opens keeps the gate state for the resume; a complete checklist meets the rule as a claim does. And the schema.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskSpec, AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { EpisodeResultInput } from '../../controller/api/episode-result.ts';
import type { GateRun } from '../../controller/api/gates.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { Action, ReconcileResult } from '../../controller/reconciler/reconcile.ts';
import type { ReconcileInput } from '../../controller/reconciler/types.ts';

const T0 = Date.parse('2026-11-25T12:00:00.000Z');
const OFF = { noProgressEpisodes: 0, halfOpenEpisodes: 0, sameErrorEpisodes: 0 };

function pipeline(gate: Record<string, unknown> = {}, over: Record<string, unknown> = {}): AgentTaskSpec {
  return AgentTaskSpecSchema.parse({
    agent: { command: ['agent'] },
    breaker: OFF,
    backoff: { initialSeconds: 1, factor: 1, maxSeconds: 1 },
    completion: { onExitZero: true },
    steps: [
      {
        name: 'build',
        prompt: 'build it',
        gates: [
          { name: 'lint', fix: ['fmt'], check: ['lint'] },
          { name: 'test', check: ['test'], maxFixEpisodes: 2, ...gate },
        ],
        ...over,
      },
      { name: 'review', prompt: 'review it' },
    ],
  });
}

class Driver {
  status: AgentTaskStatus = emptyStatus();
  last!: ReconcileResult;
  private minute = 0;
  readonly spec: AgentTaskSpec;
  constructor(spec: AgentTaskSpec) {
    this.spec = spec;
  }
  pass(episode?: ReconcileInput['episode'], over: Partial<ReconcileInput> = {}): ReconcileResult {
    this.minute++;
    this.last = reconcile({
      namespace: 'default',
      name: 'p',
      generation: 1,
      spec: this.spec,
      status: this.status,
      dependencies: {},
      freeSlots: 1,
      now: new Date(T0 + this.minute * 60_000),
      jitter: 0,
      episode,
      ...over,
    });
    this.status = this.last.status;
    return this.last;
  }
  finish(result: EpisodeResultInput): ReconcileResult {
    const number = this.status.currentEpisode?.number;
    assert.ok(number, 'an episode runs');
    return this.pass({ number, state: 'finished', result: episodeResult({ costUSD: 0.1, ...result }) });
  }
  /** Waits out a backoff: the next pass after nextEpisodeAt. */
  afterBackoff(): ReconcileResult {
    this.minute += 5;
    return this.pass();
  }
}

const PASS: GateRun[] = [
  { name: 'lint', fixExitCode: 0, exitCode: 0, durationMs: 5, output: '' },
  { name: 'test', exitCode: 0, durationMs: 9, output: 'ok 3 tests' },
];
const TEST_FAILS = (output: string): GateRun[] => [PASS[0], { name: 'test', exitCode: 1, durationMs: 9, output }];
const started = (r: ReconcileResult) => r.actions.find((a) => a.type === 'StartEpisode')?.number;
const reasons = (r: ReconcileResult) => r.actions.flatMap((a) => (a.type === 'RecordEvent' ? [a.reason] : []));
const recorded = (r: ReconcileResult) =>
  r.actions.find((a): a is Extract<Action, { type: 'RecordEpisode' }> => a.type === 'RecordEpisode')?.record;

test('gates pass (fix ran, then check): the step succeeds and the next one starts; the record has the runs', () => {
  const d = new Driver(pipeline());
  d.pass();
  const r = d.finish({ exitCode: 0, gates: PASS });
  assert.equal(d.status.steps?.[0].phase, 'Succeeded');
  assert.equal(d.status.steps?.[0].gate, undefined);
  assert.equal(d.status.step?.name, 'review');
  assert.equal(started(r), 2);
  assert.deepEqual(reasons(r).slice(0, 3), ['EpisodeSucceeded', 'GatesPassed', 'StepSucceeded']);
  assert.deepEqual(recorded(r)?.gates, PASS);
});

test('a failing check: a fix episode starts at once with the gate state; passing its gates completes the step', () => {
  const d = new Driver(pipeline());
  d.pass();
  let r = d.finish({ exitCode: 0, gates: TEST_FAILS('not ok 2 - adds\n# fail 1') });
  assert.equal(d.status.step?.name, 'build');
  assert.deepEqual(d.status.steps?.[0].gate, {
    name: 'test',
    fixEpisodes: 0,
    exitCode: 1,
    lastOutput: 'not ok 2 - adds\n# fail 1',
  });
  assert.ok(reasons(r).includes('GateCheckFailed'));
  assert.equal(started(r), 2);
  assert.match(d.status.message ?? '', /^episode 2 \(step 1\/2 build: fix episode 1 for gate test\) running$/);
  // The fix episode exits 0 without any claim: judged by the gates alone.
  r = d.finish({ exitCode: 0, gates: PASS });
  assert.equal(d.status.steps?.[0].phase, 'Succeeded');
  assert.equal(d.status.steps?.[0].reason, 'GatesPassed');
  assert.equal(d.status.steps?.[0].gate, undefined);
  assert.equal(d.status.step?.name, 'review');
  assert.equal(started(r), 3);
});

test('maxFixEpisodes spent: the step and the task fail with GateFailed and the last output, tail kept', () => {
  const d = new Driver(pipeline());
  d.pass();
  d.finish({ exitCode: 0, gates: TEST_FAILS('first') });
  d.finish({ exitCode: 0, gates: TEST_FAILS('second') });
  assert.equal(d.status.steps?.[0].gate?.fixEpisodes, 1);
  assert.equal(d.status.steps?.[0].gate?.lastOutput, 'second');
  const long = `${'x'.repeat(1993)}THE END`;
  const r = d.finish({ exitCode: 0, gates: TEST_FAILS(long) });
  assert.equal(started(r), undefined);
  assert.equal(d.status.phase, 'Failed');
  assert.equal(d.status.reason, 'GateFailed');
  assert.equal(d.status.steps?.[0].phase, 'Failed');
  assert.equal(d.status.steps?.[0].reason, 'GateFailed');
  assert.match(d.status.message ?? '', /^step 1\/2 build: gate test exited 1 after 2 of 2 fix episodes: …x+THE END$/);
  assert.ok((d.status.message ?? '').length <= 2000);
  assert.ok((d.status.steps?.[0].gate?.lastOutput ?? '').endsWith('THE END'));
  assert.ok((d.status.steps?.[0].gate?.lastOutput ?? '').length <= 2000);
  assert.ok(reasons(r).includes('TaskFailed'));
});

test('a timed-out check fails its gate; with maxFixEpisodes 0 the step fails at once', () => {
  const d = new Driver(pipeline({ maxFixEpisodes: 0, timeoutSeconds: 7 }));
  d.pass();
  const timedOut: GateRun = { name: 'test', exitCode: null, timedOut: true, durationMs: 7000, output: 'slow…' };
  const r = d.finish({ exitCode: 0, gates: [PASS[0], timedOut] });
  assert.equal(started(r), undefined);
  assert.equal(d.status.reason, 'GateFailed');
  assert.match(d.status.message ?? '', /gate test timed out after 7s after 0 of 0 fix episodes: slow…/);
});

test('a fix episode whose agent fails counts (backoff as usual); an outage does not', () => {
  const d = new Driver(pipeline());
  d.pass();
  d.finish({ exitCode: 0, gates: TEST_FAILS('boom') });
  d.finish({ exitCode: null, errorClass: 'transient', message: 'overloaded' });
  assert.equal(d.status.steps?.[0].gate?.fixEpisodes, 0);
  assert.equal(d.status.reason, 'Backoff');
  d.afterBackoff();
  d.finish({ exitCode: 2 });
  assert.equal(d.status.steps?.[0].gate?.fixEpisodes, 1);
  assert.equal(d.status.steps?.[0].gate?.lastOutput, 'boom');
  assert.equal(d.status.phase, 'Waiting');
  d.afterBackoff();
  d.finish({ exitCode: 3 });
  assert.equal(d.status.phase, 'Failed');
  assert.equal(d.status.reason, 'GateFailed');
  assert.match(
    d.status.message ?? '',
    /gate test still failing after fix episode 4 failed after 2 of 2 fix episodes: boom/,
  );
});

test("a gate that fails after another gate's fix episode keeps counting fix episodes (no endless ping-pong)", () => {
  const d = new Driver(pipeline());
  d.pass();
  d.finish({ exitCode: 0, gates: TEST_FAILS('t') });
  d.finish({ exitCode: 0, gates: [{ name: 'lint', fixExitCode: 0, exitCode: 1, output: 'lint says no' }] });
  assert.deepEqual(d.status.steps?.[0].gate, { name: 'lint', fixEpisodes: 1, exitCode: 1, lastOutput: 'lint says no' });
  assert.equal(d.status.phase, 'Running');
});

test('a fix episode without gate runs (its result read from the log after a crash) counts and keeps the last output', () => {
  const d = new Driver(pipeline());
  d.pass();
  d.finish({ exitCode: 0, gates: TEST_FAILS('the real failure') });
  const r = d.finish({ exitCode: 0 });
  assert.deepEqual(d.status.steps?.[0].gate, {
    name: 'test',
    fixEpisodes: 1,
    exitCode: 1,
    lastOutput: 'the real failure',
  });
  assert.ok(reasons(r).includes('GateCheckFailed'));
  assert.equal(started(r), 3);
});

test('a fix episode that opens the breaker keeps the gate state; a resume goes on fixing that gate', () => {
  const promised = pipeline({}, { completion: { onExitZero: false, promise: 'DONE' } });
  const spec = AgentTaskSpecSchema.parse({ ...promised, breaker: { ...OFF, noProgressEpisodes: 1 } });
  const d = new Driver(spec);
  d.pass();
  const unchanged = { workspace: { kind: 'directory' as const, changed: false } };
  d.finish({ exitCode: 0, completion: 'promise', gates: TEST_FAILS('not ok 1'), evidence: unchanged });
  d.finish({ exitCode: 0, gates: TEST_FAILS('not ok 2'), evidence: unchanged });
  assert.deepEqual([d.status.phase, d.status.reason], ['NeedsReview', 'CircuitOpen']);
  assert.deepEqual([d.status.steps?.[0].gate?.name, d.status.steps?.[0].gate?.fixEpisodes], ['test', 1]);
  assert.equal(d.status.steps?.[0].gate?.lastOutput, 'not ok 2');
  const r = d.pass(undefined, { resumeRequest: { token: 'r1', by: 'alice', episodes: 1 } });
  assert.equal(started(r), 3);
  assert.equal(d.status.step?.name, 'build');
  assert.equal(d.status.steps?.[0].gate?.fixEpisodes, 1, 'the fix episodes spent stay spent');
  d.finish({ exitCode: 0, gates: PASS });
  assert.deepEqual([d.status.steps?.[0].phase, d.status.steps?.[0].reason], ['Succeeded', 'GatesPassed']);
});

test('a cancelled fix episode (a stop) spends no fix episode', () => {
  const d = new Driver(pipeline());
  d.pass();
  d.finish({ exitCode: 0, gates: TEST_FAILS('t') });
  d.finish({ exitCode: null, cancelled: true });
  assert.equal(d.status.steps?.[0].gate?.fixEpisodes, 0);
});

test("fix episodes are bounded by maxFixEpisodes, not the step's maxEpisodes", () => {
  const d = new Driver(pipeline({}, { limits: { maxEpisodes: 1 } }));
  d.pass();
  const r = d.finish({ exitCode: 0, gates: TEST_FAILS('t') });
  assert.equal(started(r), 2);
  assert.equal(d.status.reason, 'EpisodeRunning');
});

const PLAN_DONE = { checklist: { done: 2, total: 2, inProgress: 0, failed: 0, skipped: 0 } };

function checklistPipeline(): AgentTaskSpec {
  const { steps, ...rest } = pipeline();
  const build = { ...steps?.[0], completion: { onExitZero: false, checklist: true } };
  return AgentTaskSpecSchema.parse({ ...rest, progress: { checklist: 'PLAN.md' }, steps: [build, steps?.[1]] });
}

test('a complete checklist (no claim) meets the rule: its gate runs judge the step, pass or fail', () => {
  const d = new Driver(checklistPipeline());
  d.pass();
  let r = d.finish({ exitCode: 0, evidence: PLAN_DONE, gates: TEST_FAILS('not ok 1') });
  assert.equal(d.status.steps?.[0].gate?.name, 'test');
  assert.ok(reasons(r).includes('GateCheckFailed'));
  assert.equal(started(r), 2);
  r = d.finish({ exitCode: 0, evidence: PLAN_DONE, gates: PASS });
  assert.deepEqual(
    [d.status.steps?.[0].phase, d.status.steps?.[0].reason, d.status.steps?.[0].gate],
    ['Succeeded', 'GatesPassed', undefined],
  );
  assert.equal(d.status.step?.name, 'review');
  assert.ok(!reasons(r).includes('GatesNotRun'));
});

test('a complete checklist whose gates pass at once: the step succeeds as ChecklistComplete', () => {
  const d = new Driver(checklistPipeline());
  d.pass();
  const r = d.finish({ exitCode: 0, evidence: PLAN_DONE, gates: PASS });
  assert.deepEqual([d.status.steps?.[0].phase, d.status.steps?.[0].reason], ['Succeeded', 'ChecklistComplete']);
  assert.deepEqual(reasons(r).slice(0, 3), ['EpisodeSucceeded', 'GatesPassed', 'StepSucceeded']);
});

test('an incomplete checklist ignores gate runs: the step goes on without a gate state', () => {
  const d = new Driver(checklistPipeline());
  d.pass();
  const half = { checklist: { ...PLAN_DONE.checklist, done: 1 } };
  d.finish({ exitCode: 0, evidence: half, gates: TEST_FAILS('t') });
  assert.equal(d.status.steps?.[0].gate, undefined);
  assert.equal(d.status.step?.name, 'build');
});

test('a met completion rule whose result has no gate runs (read back from its log) continues: GatesNotRun', () => {
  const d = new Driver(pipeline());
  d.pass();
  const r = d.finish({ exitCode: 0 });
  assert.ok(reasons(r).includes('GatesNotRun'));
  assert.equal(d.status.step?.name, 'build');
  assert.equal(d.status.steps?.[0].gate, undefined);
  assert.equal(started(r), 2);
});

test('an episode whose completion rule is not met ignores gate runs', () => {
  const d = new Driver(pipeline({}, { completion: { onExitZero: false } }));
  d.pass();
  d.finish({ exitCode: 0, gates: TEST_FAILS('t') });
  assert.equal(d.status.steps?.[0].gate, undefined);
  assert.equal(d.status.reason, 'EpisodeRunning');
});

test('gate schema: defaults, unique names and messages naming the field', () => {
  const spec = pipeline();
  assert.deepEqual(spec.steps?.[0].gates?.[0], {
    name: 'lint',
    fix: ['fmt'],
    check: ['lint'],
    maxFixEpisodes: 3,
    timeoutSeconds: 600,
  });
  const bad = AgentTaskSpecSchema.safeParse({
    agent: { command: ['a'] },
    steps: [
      {
        name: 's',
        prompt: 'p',
        gates: [
          { name: 'test', check: ['t'] },
          { name: 'test', check: ['t'] },
          { name: 'Bad_Name', check: [] },
        ],
      },
    ],
  });
  assert.equal(bad.success, false);
  const issues = bad.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`) ?? [];
  assert.ok(
    issues.some((i) => /^steps\.0\.gates\.2\.name: must be a lowercase RFC 1123 label/.test(i)),
    issues.join('\n'),
  );
  assert.ok(
    issues.some((i) => /^steps\.0\.gates\.2\.check: /.test(i)),
    issues.join('\n'),
  );
  const dup = AgentTaskSpecSchema.safeParse({
    agent: { command: ['a'] },
    steps: [
      {
        name: 's',
        prompt: 'p',
        gates: [
          { name: 'test', check: ['t'] },
          { name: 'test', check: ['t'] },
        ],
      },
    ],
  });
  assert.deepEqual(
    dup.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`),
    ['steps.0.gates.1.name: gate name "test" is used twice in the step (also gates[0])'],
  );
});
