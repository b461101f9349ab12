#!/usr/bin/env node
// A stand-in for RalphSharp's agent (no network), printing Claude Code's `--output-format json` result. It does
// what the step it runs in ($EPISODIC_STEP) asks: EXPLORE writes NOTES.md, REFINE writes SPEC.md, PLAN writes
// the PLAN.md queue, and each EXECUTE episode takes the next `[ ]` item: marks it `[~]`, does it and marks it
// `[x]` — or, when it cannot (the item needs a credential nobody gave it), marks it `[!]` and logs why to
// DISCOVERY.md, and goes on. Something unrelated it notices goes to IDEAS.md.
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';

readFileSync(0, 'utf8'); // the prompt (prompts/*.md, rendered)
const step = process.env.EPISODIC_STEP ?? 'execute';

const PLAN = `# Plan (one item per EXECUTE episode)
- [ ] add farewell() beside greet() (files: src/farewell.mjs)
- [ ] export it from the package entry (files: src/index.mjs)
- [ ] publish the package to the registry (files: package.json)
- [ ] document farewell() (files: README.md)
`;

function explore() {
  writeFileSync('NOTES.md', '# Notes\n- src/greet.mjs exports greet(name); ES modules; no dependencies.\n');
  return 'Explored the codebase; notes in NOTES.md. <promise>EXPLORED</promise>';
}

function refine() {
  writeFileSync('SPEC.md', '# farewell\nfarewell(name) returns "Goodbye, NAME!". Scope: src/, README.md.\n');
  return 'Refined the idea into SPEC.md. <promise>REFINED</promise>';
}

function plan() {
  writeFileSync('PLAN.md', PLAN);
  return 'Wrote the plan: 4 items in PLAN.md. <promise>PLANNED</promise>';
}

function execute() {
  const lines = existsSync('PLAN.md') ? readFileSync('PLAN.md', 'utf8').split('\n') : [];
  const at = lines.findIndex((l) => /^- \[[ ~]\] /.test(l));
  if (at < 0) return 'Nothing pending in PLAN.md. <promise>COMPLETE</promise>';
  const item = lines[at].slice(6);
  if (item.includes('publish')) {
    lines[at] = `- [!] ${item}`;
    appendFileSync(
      'DISCOVERY.md',
      '- Publishing needs a registry token; none is configured, so the item waits for a person.\n',
    );
  } else {
    doItem(item);
    lines[at] = `- [x] ${item}`;
  }
  if (item.includes('export')) appendFileSync('IDEAS.md', '- greet() and farewell() could share one formatter.\n');
  writeFileSync('PLAN.md', lines.join('\n'));
  const left = lines.some((l) => /^- \[[ ~]\] /.test(l));
  return `Worked on: ${item}.${left ? '' : ' <promise>COMPLETE</promise>'}`;
}

function doItem(item) {
  const file = /\(files: ([^)]+)\)/.exec(item)?.[1];
  if (file === 'src/farewell.mjs')
    writeFileSync(file, 'export function farewell(name) {\n  return `Goodbye, ${name}!`;\n}\n');
  else if (file === 'src/index.mjs')
    writeFileSync(file, "export { greet } from './greet.mjs';\nexport { farewell } from './farewell.mjs';\n");
  else if (file) appendFileSync(file, '\n`farewell(name)` says goodbye.\n');
}

const stages = { explore, refine, plan, execute };
const text = (stages[step] ?? execute)();
const usage = { input_tokens: 1200, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 80 };
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
