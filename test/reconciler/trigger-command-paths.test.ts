// Table test: a trigger template's ./ and ../ argv paths resolve from the trigger's file (issue 28); bare
// words, absolute paths and everything else of the template stay as written.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { commandPathsFrom } from '../../controller/reconciler/trigger-template.ts';

const DIR = '/specs/triggers';

const cases: Array<{ name: string; argv: string[]; want: string[] }> = [
  { name: './ from the file', argv: ['node', './agents/a.mjs'], want: ['node', '/specs/triggers/agents/a.mjs'] },
  { name: '../ from the file', argv: ['node', '../agents/a.mjs', '--x'], want: ['node', '/specs/agents/a.mjs', '--x'] },
  { name: 'a program ./run', argv: ['./run.sh'], want: ['/specs/triggers/run.sh'] },
  {
    name: 'bare words and absolute paths as written',
    argv: ['claude', 'agents/a.mjs', '/bin/x', '.hidden'],
    want: ['claude', 'agents/a.mjs', '/bin/x', '.hidden'],
  },
];

for (const c of cases) {
  test(`commandPathsFrom: ${c.name}`, () => {
    const spec = AgentTaskSpecSchema.parse({ agent: { command: c.argv }, prompt: 'p' });
    assert.deepEqual(commandPathsFrom(spec, DIR).agent.command, c.want);
    assert.deepEqual(spec.agent.command, c.argv, 'the template itself is not changed');
  });
}

test('commandPathsFrom: verify, step commands and gates too', () => {
  const spec = AgentTaskSpecSchema.parse({
    agent: { command: ['a'] },
    completion: { verify: ['./check.sh'] },
    steps: [
      {
        name: 's',
        prompt: 'p',
        agent: { command: ['node', './step.mjs'] },
        gates: [{ name: 'g', check: ['./test.sh'], fix: ['../fmt.sh'] }],
      },
    ],
  });
  const out = commandPathsFrom(spec, DIR);
  assert.deepEqual(out.completion.verify, ['/specs/triggers/check.sh']);
  assert.deepEqual(out.steps?.[0]?.agent?.command, ['node', '/specs/triggers/step.mjs']);
  assert.deepEqual(out.steps?.[0]?.gates?.[0]?.check, ['/specs/triggers/test.sh']);
  assert.deepEqual(out.steps?.[0]?.gates?.[0]?.fix, ['/specs/fmt.sh']);
  assert.equal(out.steps?.[0]?.prompt, 'p');
});
