// Pipelines (spec.steps) in the pure reconciler: every step transition, driven pass by pass through
// reconcile() as the loop would: the first step starts, a step's completion moves the task to the next step in
// the same pass, the last one finishes the task, a step that ends Skipped/Failed/NeedsReview ends the task the
// same way naming it, limits per step and the cost cap over the task, resume, and the spec-edit rule.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskSpec, AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { EpisodeResultInput } from '../../controller/api/episode-result.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { Action, ReconcileInput, ReconcileResult } from '../../controller/reconciler/reconcile.ts';

const T0 = Date.parse('2026-11-25T12:00:00.000Z');
const OFF = { noProgressEpisodes: 0, halfOpenEpisodes: 0, sameErrorEpisodes: 0 };

function pipeline(over: Record<string, unknown> = {}, steps?: unknown[]): AgentTaskSpec {
  return AgentTaskSpecSchema.parse({
    agent: { command: ['agent'], env: [{ name: 'SHARED', value: '1' }] },
    breaker: OFF,
    backoff: { initialSeconds: 1, factor: 1, maxSeconds: 1 },
    steps: steps ?? [
      { name: 'plan', prompt: 'plan it', completion: { onExitZero: true } },
      { name: 'build', prompt: 'build it' },
      { name: 'review', prompt: 'review it', agent: { command: ['reviewer'] } },
    ],
    ...over,
  });
}

/** One task driven pass by pass; `at` advances a minute per pass so times differ. */
class Driver {
  spec: AgentTaskSpec;
  generation = 1;
  status: AgentTaskStatus = emptyStatus();
  last!: ReconcileResult;
  private minute = 0;
  constructor(spec: AgentTaskSpec) {
    this.spec = spec;
  }
  pass(over: Partial<ReconcileInput> = {}): ReconcileResult {
    this.minute++;
    this.last = reconcile({
      namespace: 'default',
      name: 'p',
      generation: this.generation,
      spec: this.spec,
      status: this.status,
      dependencies: {},
      freeSlots: 1,
      now: new Date(T0 + this.minute * 60_000),
      jitter: 0,
      ...over,
    });
    this.status = this.last.status;
    return this.last;
  }
  /** The running episode ends with `result`. */
  finish(result: EpisodeResultInput): ReconcileResult {
    const number = this.status.currentEpisode?.number;
    assert.ok(number, 'an episode runs');
    return this.pass({ episode: { number, state: 'finished', result: episodeResult({ costUSD: 0.1, ...result }) } });
  }
  /** A spec edit: a new generation. */
  edit(spec: AgentTaskSpec): void {
    this.spec = spec;
    this.generation++;
  }
}

const started = (r: ReconcileResult) => r.actions.find((a) => a.type === 'StartEpisode')?.number;
const recorded = (r: ReconcileResult) =>
  r.actions.find((a): a is Extract<Action, { type: 'RecordEpisode' }> => a.type === 'RecordEpisode')?.record;
const phases = (s: AgentTaskStatus) => s.steps?.map((x) => `${x.name}:${x.phase}`).join(' ');

test('steps: the first pass puts the task in step 1 and starts its first episode', () => {
  const d = new Driver(pipeline());
  const r = d.pass();
  assert.equal(started(r), 1);
  assert.deepEqual(d.status.step, { index: 1, name: 'plan', summary: '1/3 plan', generation: 1 });
  assert.equal(phases(d.status), 'plan:Running build:Pending review:Pending');
  assert.equal(d.status.steps?.[0].episodes, 1);
  assert.ok(d.status.steps?.[0].startedAt);
  assert.equal(d.status.steps?.[1].startedAt, undefined);
  assert.match(d.status.message ?? '', /^episode 1 \(step 1\/3 plan: 1\/20\) running$/);
});

test('steps: a step whose completion rule is met starts the next step in the same pass; the last one ends the task', () => {
  const d = new Driver(pipeline());
  d.pass();
  // plan: onExitZero (its own completion rule) → build starts at once.
  let r = d.finish({ exitCode: 0, costUSD: 0.25 });
  assert.equal(started(r), 2);
  assert.deepEqual(d.status.step, { index: 2, name: 'build', summary: '2/3 build', generation: 1 });
  assert.equal(phases(d.status), 'plan:Succeeded build:Running review:Pending');
  assert.equal(d.status.steps?.[0].reason, 'ExitedZero');
  assert.equal(d.status.steps?.[0].costUSD, 0.25);
  assert.ok(d.status.steps?.[0].finishedAt);
  assert.equal(recorded(r)?.step, 'plan');
  assert.ok(r.actions.some((a) => a.type === 'RecordEvent' && a.reason === 'StepSucceeded'));
  // build has no onExitZero (the task's completion): exit 0 alone continues, in the same step.
  r = d.finish({ exitCode: 0 });
  assert.equal(started(r), 3);
  assert.equal(d.status.step?.index, 2);
  assert.equal(d.status.steps?.[1].episodes, 2);
  r = d.finish({ exitCode: 0, completion: 'promise' });
  assert.equal(recorded(r)?.step, 'build');
  assert.equal(started(r), 4);
  assert.equal(d.status.step?.name, 'review');
  r = d.finish({ exitCode: 0, completion: 'promise', costUSD: 0.5 });
  assert.equal(started(r), undefined);
  assert.equal(d.status.phase, 'Succeeded');
  assert.equal(d.status.reason, 'PromiseDetected');
  assert.match(d.status.message ?? '', /^step 3\/3 review: episode 4 finished the task/);
  assert.equal(phases(d.status), 'plan:Succeeded build:Succeeded review:Succeeded');
  // The task's counters and cost stay cumulative; each step has its own.
  assert.equal(d.status.episodes, 4);
  assert.equal(d.status.costUSD, 0.25 + 0.1 + 0.1 + 0.5);
  assert.deepEqual(
    d.status.steps?.map((s) => [s.episodes, s.costUSD]),
    [
      [1, 0.25],
      [2, 0.2],
      [1, 0.5],
    ],
  );
  // Settled: another pass changes nothing.
  const again = d.pass();
  assert.deepEqual(again.actions, []);
  assert.equal(d.status.phase, 'Succeeded');
});

/** A driver whose task is in step 2 (build), its first episode running. */
function inBuild(over: Record<string, unknown> = {}, steps?: unknown[]): Driver {
  const d = new Driver(pipeline(over, steps));
  d.pass();
  d.finish({ exitCode: 0 });
  assert.equal(d.status.step?.name, 'build');
  return d;
}

const BUILD_LIMITED = [
  { name: 'plan', prompt: 'plan it', completion: { onExitZero: true } },
  { name: 'build', prompt: 'build it', limits: { maxConsecutiveFailures: 1, maxEpisodes: 2 } },
  { name: 'review', prompt: 'review it' },
];

test('steps: a step Skipped after failures ends the task Skipped, naming the step', () => {
  const d = inBuild({}, BUILD_LIMITED);
  d.finish({ exitCode: 1, message: 'boom' });
  assert.equal(d.status.phase, 'Skipped');
  assert.equal(d.status.reason, 'ConsecutiveFailures');
  assert.match(d.status.message ?? '', /^step 2\/3 build: 1 consecutive failed episodes/);
  assert.equal(phases(d.status), 'plan:Succeeded build:Skipped review:Pending');
  assert.equal(d.status.steps?.[1].reason, 'ConsecutiveFailures');
  assert.ok(d.status.steps?.[1].finishedAt);
  assert.deepEqual(d.pass().actions, []);
  assert.match(d.status.message ?? '', /^step 2\/3 build: 1 consecutive/, 'the step is named once');
});

test('steps: a fatal episode ends the task Failed, naming the step', () => {
  const d = inBuild();
  d.finish({ exitCode: 1, errorClass: 'fatal', message: '401 bad key' });
  assert.equal(d.status.phase, 'Failed');
  assert.match(d.status.message ?? '', /^step 2\/3 build: episode 2 failed fatally/);
  assert.equal(d.status.steps?.[1].phase, 'Failed');
});

test("steps: maxEpisodes counts the step's episodes (and not the task's), and ends the task NeedsReview", () => {
  // The task's maxEpisodes (1) does not stop build: the step's own (2) does.
  const d = inBuild({ limits: { maxEpisodes: 1 } }, BUILD_LIMITED);
  assert.equal(started(d.last), 2);
  const r = d.finish({ exitCode: 0 });
  assert.equal(started(r), 3, "build's second episode, the task's third");
  d.finish({ exitCode: 0 });
  assert.equal(d.status.phase, 'NeedsReview');
  assert.equal(d.status.reason, 'MaxEpisodesReached');
  assert.match(d.status.message ?? '', /^step 2\/3 build: 2 episodes without finishing the task \(maxEpisodes 2\)/);
  assert.equal(d.status.steps?.[1].phase, 'NeedsReview');
  assert.equal(d.status.episodes, 3);
});

test('steps: maxCostUSD caps the whole task across steps', () => {
  const d = new Driver(pipeline({ limits: { maxCostUSD: 1 } }));
  d.pass();
  d.finish({ exitCode: 0, costUSD: 0.7 }); // plan done, build starts
  d.finish({ exitCode: 0, costUSD: 0.4 }); // build continues: but the task has spent 1.1
  assert.equal(d.status.phase, 'NeedsReview');
  assert.equal(d.status.reason, 'BudgetExceeded');
  assert.match(d.status.message ?? '', /^step 2\/3 build: spent \$1\.1000 of maxCostUSD \$1/);
  assert.equal(d.status.steps?.[1].costUSD, 0.4);
});

test("steps: a step's episodeTimeoutSeconds and minEpisodes are its own", () => {
  const d = inBuild({}, [
    { name: 'plan', prompt: 'p', completion: { onExitZero: true } },
    { name: 'build', prompt: 'b', limits: { episodeTimeoutSeconds: 60 }, completion: { minEpisodes: 2 } },
    { name: 'review', prompt: 'r' },
  ]);
  assert.equal(d.last.requeueAfterMs, 60_000 + 30_000);
  // Episode 2 of the task is build's first: a promise is not enough before build's second episode.
  d.finish({ exitCode: 0, completion: 'promise' });
  assert.equal(d.status.step?.name, 'build');
  assert.match(d.status.lastEpisode?.message ?? '', /minEpisodes \(episode 1 of at least 2\)/);
  d.finish({ exitCode: 0, completion: 'promise' });
  assert.equal(d.status.step?.name, 'review');
});

test('steps: a resumed task continues in its step, with the granted episodes for that step', () => {
  const d = inBuild({}, BUILD_LIMITED);
  d.finish({ exitCode: 0 });
  d.finish({ exitCode: 0 });
  assert.equal(d.status.reason, 'MaxEpisodesReached');
  const r = d.pass({ resumeRequest: { token: 'r1', by: 'alice', episodes: 1 } });
  assert.equal(started(r), 4);
  assert.deepEqual(d.status.step, { index: 2, name: 'build', summary: '2/3 build', generation: 1 });
  assert.equal(phases(d.status), 'plan:Succeeded build:Running review:Pending');
  assert.equal(d.status.steps?.[1].finishedAt, undefined);
  d.finish({ exitCode: 0, completion: 'promise' });
  assert.equal(d.status.step?.name, 'review');
  // review started with the grant already given: it has its own maxEpisodes, not build's grant.
  assert.equal(d.status.steps?.[2].grantBase, 1);
});

test('steps, spec edit: an edited later step restarts; finished unchanged steps stay finished', () => {
  const d = inBuild();
  d.finish({ exitCode: 0, completion: 'promise' }); // build done, review runs (episode 3)
  d.finish({ exitCode: 0 }); // review continues: episode 4
  assert.equal(d.status.steps?.[2].episodes, 2);
  const steps = structuredClone(d.spec.steps) ?? [];
  steps[2].prompt = 'review it harder';
  d.edit(pipeline({}, steps));
  // The running episode finishes in its step first; then the edit applies.
  const r = d.finish({ exitCode: 0 });
  assert.equal(started(r), 5);
  assert.equal(d.status.step?.name, 'review');
  assert.equal(d.status.steps?.[2].episodes, 1, 'review starts over');
  assert.equal(phases(d.status), 'plan:Succeeded build:Succeeded review:Running');
  assert.ok(r.actions.some((a) => a.type === 'RecordEvent' && a.reason === 'StepsChanged'));
});

test('steps, spec edit: editing an earlier step moves the task back to it; everything after starts over', () => {
  const d = inBuild();
  d.finish({ exitCode: 0, completion: 'promise' }); // review runs
  d.finish({ exitCode: 1, message: 'oops' }); // review waits in backoff
  assert.equal(d.status.reason, 'Backoff');
  const steps = structuredClone(d.spec.steps) ?? [];
  steps[0].prompt = 'plan it better';
  d.edit(pipeline({}, steps));
  const r = d.pass();
  assert.equal(started(r), 4);
  assert.deepEqual(d.status.step, { index: 1, name: 'plan', summary: '1/3 plan', generation: 2 });
  assert.equal(phases(d.status), 'plan:Running build:Pending review:Pending');
  assert.deepEqual(
    d.status.steps?.map((s) => s.episodes),
    [1, 0, 0],
  );
  assert.equal(d.status.consecutiveFailures, 0);
  assert.equal(d.status.episodes, 4, "the task's count stays cumulative");
});

test("steps, spec edit: the task's own agent is part of every step that does not replace it", () => {
  const d = inBuild();
  d.finish({ exitCode: 0, completion: 'promise' }); // review runs (its own command)
  d.finish({ exitCode: 0 });
  // review has its own command, but it inherits env: a changed task env changes plan first.
  d.edit(pipeline({ agent: { command: ['agent'], env: [{ name: 'SHARED', value: '2' }] } }));
  d.finish({ exitCode: 0 });
  assert.equal(d.status.step?.name, 'plan');
  assert.equal(phases(d.status), 'plan:Running build:Pending review:Pending');
});

test('steps, spec edit: a finished task re-opens in the first changed step; an unchanged failed step resumes', () => {
  const d = new Driver(pipeline());
  d.pass();
  for (let i = 0; i < 3; i++) d.finish({ exitCode: 0, completion: 'promise' });
  assert.equal(d.status.phase, 'Succeeded');
  const steps = structuredClone(d.spec.steps) ?? [];
  steps.push({ name: 'ship', prompt: 'ship it' });
  d.edit(pipeline({}, steps));
  const r = d.pass();
  assert.equal(started(r), 4);
  assert.deepEqual(d.status.step, { index: 4, name: 'ship', summary: '4/4 ship', generation: 2 });
  assert.equal(phases(d.status), 'plan:Succeeded build:Succeeded review:Succeeded ship:Running');

  const f = inBuild({}, BUILD_LIMITED);
  f.finish({ exitCode: 1 });
  assert.equal(f.status.phase, 'Skipped');
  const edited = structuredClone(f.spec.steps) ?? [];
  edited[2].prompt = 'review differently';
  f.edit(pipeline({}, edited));
  assert.equal(started(f.pass()), 3);
  assert.equal(f.status.step?.name, 'build', 'build is unchanged: it continues');
  assert.equal(f.status.steps?.[1].episodes, 2, 'with its counters');
  assert.equal(f.status.steps?.[1].phase, 'Running');
});

test('steps, spec edit: a spec edit that leaves the steps as they were changes nothing about them', () => {
  const d = inBuild();
  const before = structuredClone(d.status.steps);
  d.edit(pipeline({ backoff: { initialSeconds: 2, factor: 1, maxSeconds: 2 } }));
  d.finish({ exitCode: 0 });
  assert.equal(d.status.step?.name, 'build');
  assert.equal(d.status.steps?.[1].episodes, 2);
  assert.equal(d.status.steps?.[0].finishedAt, before?.[0].finishedAt);
  assert.ok(!d.last.actions.some((a) => a.type === 'RecordEvent' && a.reason === 'StepsChanged'));
});

test('steps: without a spec edit the step definitions are not compared (a controller upgrade restarts nothing)', () => {
  const d = inBuild();
  d.finish({ exitCode: 0 });
  // As if a new controller version computed other digests (say, a new default in completion).
  d.status = { ...d.status, steps: d.status.steps?.map((s) => ({ ...s, digest: 'from-an-older-version' })) };
  d.finish({ exitCode: 0 });
  assert.equal(d.status.step?.name, 'build');
  assert.equal(d.status.steps?.[1].episodes, 3);
  assert.equal(phases(d.status), 'plan:Succeeded build:Running review:Pending');
});

test('steps: an invalid spec fails the task in its step, with the spec error as the message', () => {
  const d = inBuild();
  d.finish({ exitCode: 0 });
  d.pass({ spec: undefined, specError: 'spec.steps[1].name: bad' });
  assert.equal(d.status.phase, 'Failed');
  assert.equal(d.status.reason, 'InvalidSpec');
  assert.equal(d.status.message, 'invalid spec: spec.steps[1].name: bad');
  assert.equal(phases(d.status), 'plan:Succeeded build:Failed review:Pending');
  assert.equal(d.status.steps?.[1].reason, 'InvalidSpec');
});

test('steps: a task without steps has no step status and unchanged messages', () => {
  const spec = AgentTaskSpecSchema.parse({ prompt: 'p', agent: { command: ['a'] } });
  const d = new Driver(spec);
  d.pass();
  assert.equal(d.status.step, undefined);
  assert.equal(d.status.steps, undefined);
  assert.equal(d.status.message, 'episode 1/20 running');
  const r = d.finish({ exitCode: 0, completion: 'promise' });
  assert.equal(recorded(r)?.step, undefined);
  assert.equal(d.status.message, 'episode 1 finished the task (PromiseDetected)');
});

test('steps: the event that ends the task (and its log line) names the step as the status message does', () => {
  const events = (r: ReconcileResult) =>
    r.actions.filter((a): a is Extract<Action, { type: 'RecordEvent' }> => a.type === 'RecordEvent');
  const cases: Array<{ reason: string; end: () => Driver; step: string }> = [
    { reason: 'TaskSkipped', step: '2/3 build', end: () => ended(inBuild({}, BUILD_LIMITED), { exitCode: 1 }) },
    { reason: 'TaskFailed', step: '2/3 build', end: () => ended(inBuild(), { exitCode: 1, errorClass: 'fatal' }) },
    {
      reason: 'MaxEpisodesReached',
      step: '2/3 build',
      end: () => ended(ended(inBuild({}, BUILD_LIMITED), { exitCode: 0 }), { exitCode: 0 }),
    },
    {
      reason: 'BudgetExceeded',
      step: '2/3 build',
      end: () => ended(inBuild({ limits: { maxCostUSD: 0.15 } }), { exitCode: 0 }),
    },
    {
      reason: 'TaskSkipped',
      step: '1/3 plan',
      end: () => {
        const d = new Driver(pipeline({ dependsOn: ['dep'] }));
        d.pass({ dependencies: { dep: { phase: 'Failed', awaitingAutoResume: false } } });
        return d;
      },
    },
  ];
  for (const c of cases) {
    const d = c.end();
    const event = events(d.last).find((e) => e.reason === c.reason);
    assert.ok(event, `${c.reason} in ${JSON.stringify(events(d.last))}`);
    assert.ok(d.status.message?.startsWith(`step ${c.step}: `), d.status.message);
    assert.equal(event.message, d.status.message, c.reason);
  }
});

function ended(d: Driver, result: EpisodeResultInput): Driver {
  d.finish(result);
  return d;
}
