// skipWhen and scope (README "skipWhen", "Scope"): the pure rules as tables, and what the reconciler records,
// pass by pass as the loop drives it: a step its skipWhen skips goes on without an agent episode, an episode
// outside its scope stops the task (OutOfScope) or, reverted, counts as no progress.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskSpec, AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { encodeTerminationMessage } from '../../controller/api/termination-message.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { EpisodeResultInput } from '../../controller/api/episode-result.ts';
import { effectiveSpec, stepSpec } from '../../controller/api/steps.ts';
import { REPORTED_PATH_MAX } from '../../controller/api/scope.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { Action, ReconcileInput, ReconcileResult } from '../../controller/reconciler/reconcile.ts';
import {
  alwaysAllowed,
  effectiveSkipWhen,
  scopeFacts,
  scopeStop,
  scopeViolations,
  skipWhenVerdict,
} from '../../controller/reconciler/scope.ts';

const T0 = Date.parse('2026-11-25T12:00:00.000Z');
const OFF = { noProgressEpisodes: 0, halfOpenEpisodes: 0, sameErrorEpisodes: 0 };
const PLAN_PENDING = { checklistPending: 'PLAN.md' };

function pipeline(over: Record<string, unknown> = {}, steps?: unknown[]): AgentTaskSpec {
  return AgentTaskSpecSchema.parse({
    agent: { command: ['agent'] },
    breaker: OFF,
    backoff: { initialSeconds: 1, factor: 1, maxSeconds: 1 },
    steps: steps ?? [
      { name: 'explore', prompt: 'x', skipWhen: PLAN_PENDING, completion: { onExitZero: true } },
      { name: 'plan', prompt: 'p', skipWhen: PLAN_PENDING, completion: { onExitZero: true } },
      { name: 'execute', prompt: 'e' },
    ],
    ...over,
  });
}

class Driver {
  spec: AgentTaskSpec;
  status: AgentTaskStatus = emptyStatus();
  generation = 1;
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
  finish(result: EpisodeResultInput): ReconcileResult {
    const number = this.status.currentEpisode?.number;
    assert.ok(number, 'an episode runs');
    return this.pass({ episode: { number, state: 'finished', result: episodeResult(result) } });
  }
  edit(spec: AgentTaskSpec): void {
    this.spec = spec;
    this.generation++;
  }
  skip(why = 'PLAN.md has 2 pending items'): ReconcileResult {
    return this.finish({ exitCode: null, skipped: { reason: 'SkipWhen' }, message: why });
  }
}

const started = (r: ReconcileResult) => r.actions.find((a) => a.type === 'StartEpisode')?.number;
const recorded = (r: ReconcileResult) =>
  r.actions.find((a): a is Extract<Action, { type: 'RecordEpisode' }> => a.type === 'RecordEpisode')?.record;
const eventReasons = (r: ReconcileResult) => r.actions.flatMap((a) => (a.type === 'RecordEvent' ? [a.reason] : []));
const phases = (s: AgentTaskStatus) => s.steps?.map((x) => `${x.name}:${x.phase}`).join(' ');
const counts = (over: Record<string, number>) => ({ done: 0, total: 0, inProgress: 0, failed: 0, skipped: 0, ...over });

test('skipWhenVerdict: fileExists and checklistPending, as a table of facts', () => {
  const table: Array<[string, Parameters<typeof skipWhenVerdict>[0], Parameters<typeof skipWhenVerdict>[1], string?]> =
    [
      ['no skipWhen', undefined, { exists: true }],
      ['fileExists, there', { fileExists: 'DONE' }, { exists: true }, 'DONE exists'],
      ['fileExists, missing', { fileExists: 'DONE' }, { exists: false }],
      ['plan missing', PLAN_PENDING, { exists: false }],
      ['plan unreadable', PLAN_PENDING, { exists: true }],
      ['plan empty', PLAN_PENDING, { exists: true, checklist: counts({}) }],
      [
        'one [ ] pending',
        PLAN_PENDING,
        { exists: true, checklist: counts({ total: 3, done: 2 }) },
        'PLAN.md has 1 pending item',
      ],
      [
        '[~] in progress counts',
        PLAN_PENDING,
        { exists: true, checklist: counts({ total: 2, done: 1, inProgress: 1 }) },
        'PLAN.md has 1 pending item',
      ],
      ['all done', PLAN_PENDING, { exists: true, checklist: counts({ total: 2, done: 2 }) }],
      [
        '[!] and [S] are settled',
        PLAN_PENDING,
        { exists: true, checklist: counts({ total: 3, done: 1, failed: 1, skipped: 1 }) },
      ],
      [
        'prd.json stories not passing',
        { checklistPending: 'prd.json' },
        { exists: true, checklist: counts({ total: 4, done: 1 }) },
        'prd.json has 3 pending items',
      ],
    ];
  for (const [name, skipWhen, facts, want] of table) assert.equal(skipWhenVerdict(skipWhen, facts), want, name);
});

test('skipWhen: a skipped step is recorded Skipped (SkipWhen) without an agent episode and the next step starts in the same pass', () => {
  const d = new Driver(pipeline());
  assert.equal(started(d.pass()), 1);
  const r = d.skip();
  assert.equal(started(r), 2, 'the next step starts at once');
  assert.equal(d.status.step?.name, 'plan');
  assert.equal(phases(d.status), 'explore:Skipped plan:Running execute:Pending');
  assert.equal(d.status.steps?.[0].reason, 'SkipWhen');
  assert.equal(d.status.steps?.[0].episodes, 0, 'no agent episode counted for the step');
  assert.ok(d.status.steps?.[0].finishedAt);
  assert.equal(d.status.lastEpisode?.outcome, 'skipped');
  assert.equal(d.status.lastEpisode?.message, 'skipWhen: PLAN.md has 2 pending items');
  assert.equal(recorded(r)?.outcome, 'skipped');
  assert.equal(recorded(r)?.step, 'explore');
  assert.ok(eventReasons(r).includes('StepSkipped'));
  assert.equal(d.status.consecutiveFailures, 0);
  assert.equal(d.status.costUSD, 0);
  assert.equal(d.status.breaker, undefined, 'the breaker never saw it');
  // plan skipped too: straight to execute, the step without skipWhen.
  assert.equal(started(d.skip()), 3);
  assert.equal(phases(d.status), 'explore:Skipped plan:Skipped execute:Running');
  assert.deepEqual(
    d.status.steps?.map((s) => s.episodes),
    [0, 0, 1],
  );
  d.finish({ exitCode: 0, completion: 'promise' });
  assert.equal(d.status.phase, 'Succeeded');
  assert.equal(phases(d.status), 'explore:Skipped plan:Skipped execute:Succeeded');
  // A skip is a step record, not an episode (issue 28): numbers 1 and 2 went to skipWhen checks.
  assert.equal(d.status.episodes, 1);
  assert.equal(d.status.skippedSteps, 2);
  assert.equal(d.status.lastEpisode?.number, 3);
  assert.match(d.status.message ?? '', /episode 3 finished the task \(\w+\); 1 episode ran, 2 steps skipped/);
});

test('skipWhen: a spec edit elsewhere keeps skipped steps finished; editing a skipped step checks it again', () => {
  const d = new Driver(pipeline());
  d.pass();
  d.skip();
  d.skip();
  d.finish({ exitCode: 0 }); // execute continues
  assert.equal(d.status.steps?.[2].episodes, 2);
  // The task's cost cap changes: no step's definition does.
  d.edit(pipeline({ limits: { maxCostUSD: 9 } }));
  let r = d.finish({ exitCode: 0 });
  assert.equal(d.status.step?.name, 'execute', 'goes on in execute');
  assert.equal(phases(d.status), 'explore:Skipped plan:Skipped execute:Running');
  assert.equal(d.status.steps?.[2].episodes, 3, 'its counters kept');
  // plan's prompt changes: plan starts over (its skipWhen is looked at again), and execute after it.
  d.edit(
    pipeline({}, [
      { name: 'explore', prompt: 'x', skipWhen: PLAN_PENDING, completion: { onExitZero: true } },
      { name: 'plan', prompt: 'plan anew', skipWhen: PLAN_PENDING, completion: { onExitZero: true } },
      { name: 'execute', prompt: 'e' },
    ]),
  );
  r = d.finish({ exitCode: 0 });
  assert.equal(started(r), 6);
  assert.equal(d.status.step?.name, 'plan');
  assert.equal(phases(d.status), 'explore:Skipped plan:Running execute:Pending');
});

test('skipWhen: a skipped last step ends the task Succeeded, the step stays Skipped', () => {
  const spec = pipeline({}, [
    { name: 'build', prompt: 'b', completion: { onExitZero: true } },
    { name: 'docs', prompt: 'd', skipWhen: { fileExists: 'NO_DOCS' } },
  ]);
  const d = new Driver(spec);
  d.pass();
  d.finish({ exitCode: 0 });
  const r = d.skip('NO_DOCS exists');
  assert.equal(started(r), undefined);
  assert.equal(d.status.phase, 'Succeeded');
  assert.equal(d.status.reason, 'StepsSucceeded');
  assert.match(d.status.message ?? '', /^step 2\/2 docs skipped \(SkipWhen: NO_DOCS exists\); all 2 steps done$/);
  assert.equal(phases(d.status), 'build:Succeeded docs:Skipped');
  assert.deepEqual(d.pass().actions, [], 'settled');
  assert.equal(phases(d.status), 'build:Succeeded docs:Skipped');
});

test('skipWhen: unlike a skipped step, a step Skipped after consecutive failures ends the task', () => {
  const d = new Driver(pipeline({ limits: { maxConsecutiveFailures: 1 } }));
  d.pass();
  const r = d.finish({ exitCode: 1, message: 'boom' });
  assert.equal(started(r), undefined);
  assert.equal(d.status.phase, 'Skipped');
  assert.notEqual(d.status.steps?.[0].reason, 'SkipWhen');
});

test("effectiveSkipWhen and scope: the current step's skipWhen; a step's scope replaces the task's", () => {
  const spec = pipeline({ scope: { paths: ['src/**'] } }, [
    { name: 'a', prompt: 'a', skipWhen: { fileExists: 'X' } },
    { name: 'b', prompt: 'b', scope: { paths: ['docs/**'], onViolation: 'Revert' } },
  ]);
  assert.deepEqual(effectiveSkipWhen(spec, undefined), { fileExists: 'X' });
  assert.deepEqual(effectiveSkipWhen(spec, { ...emptyStatus(), step: { index: 2, name: 'b' } }), undefined);
  assert.deepEqual(stepSpec(spec, 1).scope, { paths: ['src/**'], onViolation: 'NeedsReview' });
  assert.deepEqual(effectiveSpec(spec, { ...emptyStatus(), step: { index: 2, name: 'b' } }).scope, {
    paths: ['docs/**'],
    onViolation: 'Revert',
  });
});

test('schema: skipWhen and scope are validated with messages that say what is wrong', () => {
  const issues = (over: Record<string, unknown>, steps?: unknown[]) => {
    const r = AgentTaskSpecSchema.safeParse({
      agent: { command: ['a'] },
      ...(steps ? { steps } : { prompt: 'p' }),
      ...over,
    });
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };
  const step = (extra: Record<string, unknown>) => [{ name: 's', prompt: 'p', ...extra }];
  assert.deepEqual(issues({}, step({ skipWhen: {} })), [
    'steps.0.skipWhen: exactly one of checklistPending or fileExists is required',
  ]);
  assert.deepEqual(issues({}, step({ skipWhen: { fileExists: 'A', checklistPending: 'B' } })), [
    'steps.0.skipWhen: exactly one of checklistPending or fileExists is required',
  ]);
  assert.match(
    issues({}, step({ skipWhen: { fileExists: '../x' } })).join(),
    /must be a relative path inside the workspace/,
  );
  assert.match(issues({}, step({ skipWhen: { fileExists: '/etc/passwd' } })).join(), /inside the workspace/);
  assert.match(issues({ scope: { paths: [] } }).join(), /^scope\.paths: /);
  assert.match(
    issues({ scope: { paths: ['a'], onViolation: 'Ignore' } }).join(),
    /scope\.onViolation: .*NeedsReview.*Revert/,
  );
  assert.match(issues({ scope: { paths: ['a'], extra: 1 } }).join(), /scope: .*extra/);
  assert.deepEqual(issues({ scope: { paths: ['src/**'] } }), []);
  assert.deepEqual(
    issues({}, step({ scope: { paths: ['src/**'], onViolation: 'Revert' }, skipWhen: PLAN_PENDING })),
    [],
  );
});

test('scopeViolations: globs, the paths always allowed, normalised paths', () => {
  const spec = pipeline({ progress: { checklist: 'PLAN.md' } });
  const allowed = alwaysAllowed(spec, ['.outputs']);
  const scope = { paths: ['src/**', '*.md', 'test/*.test.ts'], onViolation: 'NeedsReview' as const };
  const table: Array<[string, string[], string[]]> = [
    ['nothing changed', [], []],
    ['all in scope', ['src/a.ts', 'src/deep/b.ts', 'README.md', 'test/x.test.ts'], []],
    ['one outside', ['src/a.ts', 'package.json'], ['package.json']],
    ['a glob is not a prefix', ['test/sub/x.test.ts', 'test/x.ts'], ['test/sub/x.test.ts', 'test/x.ts']],
    ['dotfiles are matched like any name', ['src/.env', '.github/ci.yml'], ['.github/ci.yml']],
    ['always allowed', ['PLAN.md', 'DISCOVERY.md', 'IDEAS.md', '.outputs'], []],
    ['normalised and deduplicated, sorted', ['./z.json', 'z.json', 'a//b.txt'], ['a/b.txt', 'z.json']],
  ];
  for (const [name, changed, want] of table) assert.deepEqual(scopeViolations(changed, scope, allowed), want, name);
  // The plan file is allowed even outside every glob.
  assert.deepEqual(scopeViolations(['PLAN.md'], { paths: ['src/**'], onViolation: 'Revert' }, allowed), []);
  assert.deepEqual(scopeViolations(['PLAN.md'], { paths: ['src/**'], onViolation: 'Revert' }, []), ['PLAN.md']);
});

test('scopeFacts and scopeStop: bounded facts, NeedsReview, a full revert, a partial one', () => {
  const many = Array.from({ length: 8 }, (_, i) => `f${i}`);
  const needs = scopeFacts({ paths: ['x'], onViolation: 'NeedsReview' }, many);
  assert.deepEqual(needs, { onViolation: 'NeedsReview', count: 8, paths: ['f0', 'f1', 'f2', 'f3', 'f4'], reverted: 0 });
  assert.equal(scopeFacts({ paths: ['x'], onViolation: 'NeedsReview' }, []), undefined);
  const base = episodeResult({ exitCode: 0 });
  assert.deepEqual(scopeStop({ ...base, scope: needs }, 3), {
    reason: 'OutOfScope',
    message: 'episode 3 changed 8 paths outside scope.paths: f0, f1, f2, f3, f4 (+3 more)',
  });
  const full = scopeFacts({ paths: ['x'], onViolation: 'Revert' }, ['a', 'b']);
  assert.deepEqual(full, { onViolation: 'Revert', count: 2, paths: ['a', 'b'], reverted: 2 });
  assert.equal(scopeStop({ ...base, scope: full }, 3), undefined);
  const partial = scopeFacts({ paths: ['x'], onViolation: 'Revert' }, ['a', 'b', 'c', 'd', 'e'], ['b', 'c', 'd', 'e']);
  assert.deepEqual(partial?.unrestored, ['b', 'c', 'd']);
  assert.equal(partial?.reverted, 1);
  assert.equal(
    scopeStop({ ...base, scope: partial }, 3)?.message,
    'episode 3 changed paths outside scope.paths that could not be restored: b, c, d (+1 more)',
  );
  // Worst case within the termination message's 4 KiB, with room for the rest.
  const long = Array.from({ length: 64 }, (_, i) => `${'d/'.repeat(200)}${i}`);
  const worst = scopeFacts({ paths: ['x'], onViolation: 'Revert' }, long, long);
  const added = encodeTerminationMessage({ ...base, scope: worst }).length - encodeTerminationMessage(base).length;
  assert.ok(added < 1000, `the scope facts take ${added} bytes`);
  // A cut path says it was cut: its first characters alone would name a path that may not exist.
  assert.equal(worst?.paths[0], `${'d/'.repeat(49)}d…`);
  assert.equal(worst?.paths[0].length, REPORTED_PATH_MAX);
});

function scoped(over: Record<string, unknown> = {}): AgentTaskSpec {
  return AgentTaskSpecSchema.parse({
    prompt: 'work',
    agent: { command: ['agent'] },
    breaker: OFF,
    scope: { paths: ['src/**'] },
    ...over,
  });
}

const violation = (onViolation: 'NeedsReview' | 'Revert', unrestored?: string[]) => ({
  onViolation,
  count: 2,
  paths: ['package.json', 'x/new.txt'],
  reverted: onViolation === 'Revert' ? 2 - (unrestored?.length ?? 0) : 0,
  ...(unrestored ? { unrestored, unrestoredCount: unrestored.length } : {}),
});
const changedWs = { workspace: { kind: 'git' as const, changed: true } };

test('scope NeedsReview: an episode outside its scope stops the task (OutOfScope), even one that claimed completion', () => {
  const d = new Driver(scoped());
  d.pass();
  const r = d.finish({ exitCode: 0, completion: 'promise', scope: violation('NeedsReview'), evidence: changedWs });
  assert.equal(started(r), undefined);
  assert.equal(d.status.phase, 'NeedsReview');
  assert.equal(d.status.reason, 'OutOfScope');
  assert.equal(d.status.message, 'episode 1 changed 2 paths outside scope.paths: package.json, x/new.txt');
  assert.ok(eventReasons(r).includes('OutOfScope'));
  assert.ok(!eventReasons(r).includes('EpisodeSucceeded'));
  assert.match(recorded(r)?.message ?? '', /^episode 1 changed 2 paths outside scope\.paths/);
  assert.deepEqual(d.pass().actions, [], 'stays for a person');
});

test('scope NeedsReview in a pipeline: the step ends NeedsReview and the task names it; no next step', () => {
  const d = new Driver(
    pipeline({}, [
      { name: 'a', prompt: 'a', completion: { onExitZero: true }, scope: { paths: ['docs/**'] } },
      { name: 'b', prompt: 'b' },
    ]),
  );
  d.pass();
  const r = d.finish({ exitCode: 0, scope: violation('NeedsReview') });
  assert.equal(started(r), undefined);
  assert.equal(phases(d.status), 'a:NeedsReview b:Pending');
  assert.match(d.status.message ?? '', /^step 1\/2 a: episode 1 changed 2 paths outside scope\.paths/);
});

test('scope Revert: a reverted episode counts as no progress and cannot finish the task; the next one starts', () => {
  const d = new Driver(
    scoped({
      scope: { paths: ['src/**'], onViolation: 'Revert' },
      completion: { onExitZero: true },
      breaker: { noProgressEpisodes: 2, halfOpenEpisodes: 1, sameErrorEpisodes: 0 },
    }),
  );
  d.pass();
  const evidence = { ...changedWs, checklist: counts({ total: 2, done: 2 }) };
  let r = d.finish({ exitCode: 0, completion: 'promise', scope: violation('Revert'), evidence, message: 'done' });
  assert.equal(started(r), 2, 'continues');
  assert.equal(d.status.lastEpisode?.outcome, 'continue');
  assert.equal(
    d.status.lastEpisode?.message,
    'reverted 2 paths outside scope.paths (package.json, x/new.txt); no progress; done',
  );
  assert.equal(d.status.workspaceChanges, 0);
  assert.equal(d.status.breaker?.noProgress, 1);
  r = d.finish({ exitCode: 0, scope: violation('Revert'), evidence });
  assert.equal(d.status.breaker?.state, 'HalfOpen', 'two reverted episodes: no progress twice');
  // An episode inside its scope makes progress again and may finish.
  r = d.finish({ exitCode: 0, evidence: changedWs });
  assert.equal(d.status.phase, 'Succeeded');
  assert.equal(d.status.breaker?.state, 'Closed');
});

test('scope Revert that could not restore everything (a plain directory): NeedsReview, naming what is left', () => {
  const d = new Driver(scoped({ scope: { paths: ['src/**'], onViolation: 'Revert' } }));
  d.pass();
  const r = d.finish({ exitCode: 0, scope: violation('Revert', ['package.json']) });
  assert.equal(started(r), undefined);
  assert.equal(d.status.phase, 'NeedsReview');
  assert.equal(d.status.reason, 'OutOfScope');
  assert.equal(
    d.status.message,
    'episode 1 changed paths outside scope.paths that could not be restored: package.json',
  );
});

test('scope: a fatal episode stays Failed; the scope is named in its record', () => {
  const d = new Driver(scoped());
  d.pass();
  d.finish({ exitCode: 1, errorClass: 'fatal', message: 'bad key', scope: violation('NeedsReview') });
  assert.equal(d.status.phase, 'Failed');
  assert.match(d.status.lastEpisode?.message ?? '', /outside scope\.paths.*; bad key$/);
});
