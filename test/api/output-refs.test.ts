// Table tests for what validate says of {{steps.NAME.outputs.KEY}} (issue 28): a step not in spec.steps is an
// error naming the field (and the step it may mean), a key its step's prompt never asks for or a step that
// runs later a warning; and a string where an argv list belongs gets "give it as a list: [...]".
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { askedKeys, outputRefProblems } from '../../controller/api/output-refs.ts';
import { validateSpec } from '../../controller/api/validate.ts';

const plan = { name: 'plan', prompt: 'Publish <output name="MODULE">…</output> and <output name=\'FN\'>' };
const build = (prompt: string) => ({ name: 'build', prompt });

const cases: Array<{
  name: string;
  spec: Parameters<typeof outputRefProblems>[0];
  errors: RegExp[];
  warnings: RegExp[];
}> = [
  {
    name: 'a declared key of an earlier step: nothing to say',
    spec: { steps: [plan, build('Module {{steps.plan.outputs.MODULE}}, {{ steps.plan.outputs.FN }}')] },
    errors: [],
    warnings: [],
  },
  {
    name: 'a step that does not exist: an error at the prompt, naming the near step',
    spec: { steps: [plan, build('{{steps.planning.outputs.MODULE}}')] },
    errors: [
      /^steps\.1\.prompt: \{\{steps\.planning\.outputs\.MODULE\}\}: no step "planning" \(spec\.steps has plan, build\); did you mean "plan"\?/,
    ],
    warnings: [],
  },
  {
    name: 'a task without steps naming one',
    spec: { prompt: 'use {{steps.plan.outputs.X}}' },
    errors: [/^prompt: .*no step "plan" \(the task has no spec\.steps\)/],
    warnings: [],
  },
  {
    name: 'an undeclared key: a warning with the declared one it may mean',
    spec: { steps: [plan, build('{{steps.plan.outputs.MODUL}}')] },
    errors: [],
    warnings: [/^steps\.1\.prompt: .*step "plan"'s prompt never asks for MODUL .*did you mean MODULE\?/],
  },
  {
    name: 'KEY=… for $EPISODIC_OUTPUTS declares a key too',
    spec: {
      steps: [{ name: 'plan', prompt: 'Write MODULE=… to $EPISODIC_OUTPUTS' }, build('{{steps.plan.outputs.MODULE}}')],
    },
    errors: [],
    warnings: [],
  },
  {
    name: 'a producer with a promptFile: its keys are unknown, nothing said',
    spec: { steps: [{ name: 'plan', promptFile: 'PLAN.md' }, build('{{steps.plan.outputs.ANY}}')] },
    errors: [],
    warnings: [],
  },
  {
    name: 'a step that runs later: a warning',
    spec: { steps: [build('{{steps.plan.outputs.MODULE}}'), plan] },
    errors: [],
    warnings: [/^steps\.0\.prompt: .*step "plan" runs after this one/],
  },
  {
    name: "a step's own placeholder does not declare the key it reads",
    spec: { steps: [{ name: 'plan', prompt: 'again: {{steps.plan.outputs.K}}' }] },
    errors: [],
    warnings: [/never asks for K/],
  },
];

for (const c of cases) {
  test(`outputRefProblems: ${c.name}`, () => {
    const out = outputRefProblems(c.spec);
    const words = (ps: typeof out.errors) => ps.map((p) => `${p.path.join('.')}: ${p.message}`);
    assert.equal(out.errors.length, c.errors.length, words(out.errors).join('\n'));
    assert.equal(out.warnings.length, c.warnings.length, words(out.warnings).join('\n'));
    for (const [i, re] of c.errors.entries()) assert.match(words(out.errors)[i] ?? '', re);
    for (const [i, re] of c.warnings.entries()) assert.match(words(out.warnings)[i] ?? '', re);
  });
}

test('askedKeys: <output name="K">, KEY= lines; not the prompt placeholders', () => {
  assert.deepEqual(askedKeys('<output name="A"> B=1 {{steps.x.outputs.C}} {{D=}}'), ['A', 'B']);
});

test('validateSpec: the schema refuses a reference to no step, naming the field', () => {
  const v = validateSpec({ agent: { command: ['a'] }, steps: [plan, build('{{steps.nope.outputs.MODULE}}')] });
  assert.equal(v.ok, false);
  assert.match(
    v.ok ? '' : (v.errors[0] ?? ''),
    /^spec\.steps\[1\]\.prompt: \{\{steps\.nope\.outputs\.MODULE\}\}: no step "nope"/,
  );
});

const argvCases: Array<{ field: string; spec: Record<string, unknown>; line: RegExp }> = [
  {
    field: 'a gate check as a string',
    spec: {
      agent: { command: ['a'] },
      steps: [{ name: 's', prompt: 'p', gates: [{ name: 'g', check: 'npm test -- --grep "a b"' }] }],
    },
    line: /^spec\.steps\[0\]\.gates\[0\]\.check: .*expected array, received string; give it as a list: \["npm","test","--","--grep","a b"\]$/,
  },
  {
    field: 'the agent command as a string',
    spec: { agent: { command: 'node agent.mjs' }, prompt: 'p' },
    line: /^spec\.agent\.command: .*; give it as a list: \["node","agent\.mjs"\]$/,
  },
  {
    field: 'completion.verify as a string',
    spec: { agent: { command: ['a'] }, prompt: 'p', completion: { verify: 'make check' } },
    line: /^spec\.completion\.verify: .*; give it as a list: \["make","check"\]$/,
  },
  {
    field: 'dependsOn as a string: one entry, not split',
    spec: { agent: { command: ['a'] }, prompt: 'p', dependsOn: 'api server' },
    line: /^spec\.dependsOn: .*; give it as a list: \["api server"\]$/,
  },
];

for (const c of argvCases) {
  test(`validateSpec: ${c.field} gets a list hint`, () => {
    const v = validateSpec(c.spec);
    assert.equal(v.ok, false);
    assert.ok(!v.ok && v.errors.some((e) => c.line.test(e)), v.ok ? '' : v.errors.join('\n'));
  });
}

test('validateSpec: a number where a list is expected gets no list hint', () => {
  const v = validateSpec({ agent: { command: 7 }, prompt: 'p' });
  assert.ok(!v.ok && v.errors.every((e) => !e.includes('give it as a list')));
});
