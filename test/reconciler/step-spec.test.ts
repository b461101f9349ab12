// spec.steps as written: validation messages that name the field, and the effective spec of a step (its
// agent, completion and limits merged onto the task's) that the reconciler and every executor use.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { currentStep, effectiveSpec, stepDigest, stepEnv, stepSpec } from '../../controller/api/steps.ts';
import { validateSpec } from '../../controller/api/validate.ts';
import { renderPrompt } from '../../controller/executors/prompt.ts';

const agent = {
  command: ['agent', '--fast'],
  env: [
    { name: 'KEY', value: 'task' },
    { name: 'ONLY_TASK', value: '1' },
  ],
};

function errors(spec: Record<string, unknown>): string[] {
  const v = validateSpec(spec);
  return v.ok ? [] : v.errors;
}

test('step validation names the field: duplicate and malformed names, prompts, unknown and task-only limits', () => {
  assert.deepEqual(
    errors({
      agent,
      steps: [
        { name: 'plan', prompt: 'p' },
        { name: 'plan', prompt: 'q' },
        { name: 'Build', prompt: 'b' },
        { name: 'test', prompt: 't', promptFile: 'T.md' },
        { name: 'ship', prompt: 's', limits: { maxCostUSD: 1 } },
      ],
    }),
    [
      'spec.steps[2].name: must be a lowercase RFC 1123 label (a-z, 0-9, "-")',
      'spec.steps[3].prompt: exactly one of prompt or promptFile is required',
      'spec.steps[4].limits.maxCostUSD: unknown field',
      'spec.steps[1].name: step name "plan" is used twice (also steps[0])',
    ],
  );
  assert.deepEqual(
    errors({ agent, steps: [{ name: 'a', prompt: 'p', limits: { maxEpisode: 2 }, agent: { comand: ['x'] } }] }),
    [
      'spec.steps[0].agent.comand: unknown field (did you mean "command"?)',
      'spec.steps[0].limits.maxEpisode: unknown field (did you mean "maxEpisodes"?)',
    ],
  );
  assert.deepEqual(errors({ agent, prompt: 'p', steps: [{ name: 'a', prompt: 'p' }] }), [
    'spec.prompt: exactly one of prompt or promptFile is required, or steps instead of both',
  ]);
  assert.deepEqual(errors({ agent, steps: [] }), ['spec.steps: Too small: expected array to have >=1 items']);
  assert.deepEqual(errors({ agent, steps: [{ name: 'a', prompt: 'p', completion: { requires: ['verify'] } }] }), [
    'spec.steps[0].completion.requires: requires verify, but completion.verify names no command',
  ]);
  // The task's verify command satisfies a step's requirement: the step's completion is merged onto it.
  assert.deepEqual(
    errors({
      agent,
      completion: { verify: ['npm', 'test'] },
      steps: [{ name: 'a', prompt: 'p', completion: { requires: ['verify'] } }],
    }),
    [],
  );
});

test("a step's agent, completion and limits override the task's field by field; env by name", () => {
  const spec = AgentTaskSpecSchema.parse({
    agent: { ...agent, output: 'claude', pricing: { inputPerMTok: 1, outputPerMTok: 2 } },
    completion: { promise: 'DONE', verify: ['npm', 'test'] },
    limits: { maxEpisodes: 7, episodeTimeoutSeconds: 100, maxCostUSD: 3 },
    steps: [
      { name: 'plan', prompt: 'plan' },
      {
        name: 'build',
        promptFile: 'BUILD.md',
        agent: { command: ['codex', 'exec'], output: 'codex', env: [{ name: 'KEY', value: 'step' }], image: 'x:1' },
        completion: { promise: 'BUILT', onExitZero: true },
        limits: { maxEpisodes: 2 },
      },
    ],
  });
  const plan = stepSpec(spec, 1);
  assert.equal(plan.prompt, 'plan');
  assert.deepEqual(plan.agent, spec.agent);
  assert.deepEqual(plan.completion, spec.completion);
  const build = stepSpec(spec, 2);
  assert.equal(build.prompt, undefined);
  assert.equal(build.promptFile, 'BUILD.md');
  assert.deepEqual(build.agent.command, ['codex', 'exec']);
  assert.equal(build.agent.output, 'codex');
  assert.equal(build.agent.image, 'x:1');
  assert.equal(build.agent.promptVia, 'stdin', "the task's (default) where the step says nothing");
  assert.deepEqual(build.agent.pricing, spec.agent.pricing);
  assert.deepEqual(build.agent.env, [
    { name: 'KEY', value: 'step' },
    { name: 'ONLY_TASK', value: '1' },
  ]);
  assert.deepEqual(
    [build.completion.promise, build.completion.onExitZero, build.completion.verify],
    ['BUILT', true, ['npm', 'test']],
  );
  assert.deepEqual(build.limits, {
    maxEpisodes: 2,
    episodeTimeoutSeconds: 100,
    maxConsecutiveFailures: 3,
    maxCostUSD: 3,
  });

  // effectiveSpec follows status.step: by name, so an edit that moves a step does not change a running episode's.
  assert.equal(effectiveSpec(spec, undefined).prompt, 'plan');
  assert.equal(effectiveSpec(spec, { step: { index: 2, name: 'build' } } as never).promptFile, 'BUILD.md');
  assert.deepEqual(currentStep(spec, { step: { index: 1, name: 'build' } } as never), { index: 2, name: 'build' });
  assert.deepEqual(currentStep(spec, { step: { index: 9, name: 'gone' } } as never), { index: 2, name: 'build' });
  const plain = AgentTaskSpecSchema.parse({ prompt: 'p', agent });
  assert.equal(effectiveSpec(plain, undefined), plain, 'a task without steps is its own effective spec');
  assert.equal(currentStep(plain, undefined), undefined);
});

test("a step's digest changes with what its episodes run, including what it inherits from the task", () => {
  const make = (over: Record<string, unknown> = {}, build: Record<string, unknown> = {}) =>
    AgentTaskSpecSchema.parse({
      agent,
      steps: [
        { name: 'plan', prompt: 'plan' },
        { name: 'build', prompt: 'build', agent: { command: ['b'] }, ...build },
      ],
      ...over,
    });
  const base = make();
  assert.equal(stepDigest(base, 1), stepDigest(make(), 1), 'stable');
  assert.equal(stepDigest(make({ backoff: { initialSeconds: 1 } }), 1), stepDigest(base, 1), 'backoff is the task’s');
  assert.notEqual(stepDigest(make({ agent: { ...agent, command: ['other'] } }), 1), stepDigest(base, 1));
  assert.equal(
    stepDigest(make({ agent: { ...agent, command: ['other'] } }), 2),
    stepDigest(base, 2),
    'build has its own command',
  );
  assert.notEqual(stepDigest(make({}, { limits: { maxEpisodes: 2 } }), 2), stepDigest(base, 2));
});

test('EPISODIC_STEP / EPISODIC_STEP_INDEX and {{step.name}} / {{step.index}}', () => {
  assert.deepEqual(stepEnv({ index: 2, name: 'build' }), { EPISODIC_STEP: 'build', EPISODIC_STEP_INDEX: '2' });
  assert.deepEqual(stepEnv(undefined), {});
  const vars = { task: 't', episode: 3, maxEpisodes: 5 };
  assert.equal(
    renderPrompt('{{step.name}} #{{ step.index }}', { ...vars, step: { index: 2, name: 'build' } }),
    'build #2',
  );
  assert.equal(renderPrompt('{{step.name}}', vars), '{{step.name}}', 'left as written without steps');
});
