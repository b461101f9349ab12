#!/usr/bin/env node
// A stand-in agent for the leash example, printing Claude Code's `--output-format json` result (no network).
// LEASH_AGENT picks how it behaves: `ticks` does one PLAN.md item per episode, `stuck` changes nothing,
// `claims-done` changes nothing yet says it is done every time, `tests-only` only runs the tests and reports
// a RALPH_STATUS block saying so.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

readFileSync(0, 'utf8'); // the prompt
let text = 'I looked at the code again; nothing to change yet.';
if (process.env.LEASH_AGENT === 'claims-done') text = 'All done! <promise>COMPLETE</promise>';
if (process.env.LEASH_AGENT === 'tests-only') {
  text = [
    'Ran the test suite again: 42 passed.',
    '---RALPH_STATUS---',
    'STATUS: IN_PROGRESS',
    'WORK_TYPE: TESTING',
    'TESTS_STATUS: PASSING',
    '---END_RALPH_STATUS---',
  ].join('\n');
}
if (process.env.LEASH_AGENT === 'ticks') {
  if (!existsSync('PLAN.md'))
    writeFileSync('PLAN.md', '- [ ] parse the input\n- [ ] add tests\n- [ ] write the docs\n');
  const plan = readFileSync('PLAN.md', 'utf8');
  writeFileSync('PLAN.md', plan.replace('- [ ]', '- [x]'));
  text = plan.includes('- [ ]') ? 'Ticked the next item of PLAN.md.' : 'Nothing left in PLAN.md.';
}
const usage = { input_tokens: 1500, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 60 };
const result = {
  type: 'result',
  subtype: 'success',
  is_error: false,
  num_turns: 1,
  result: text,
  total_cost_usd: 0.01,
  usage,
};
process.stdout.write(`${JSON.stringify(result)}\n`);
