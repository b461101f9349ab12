#!/usr/bin/env node
// implement: writes the module and function its prompt names (plan's outputs). Its first try has trailing
// blanks (the lint gate's fix removes them) and forgets to lowercase (the test gate fails); the fix episode,
// whose prompt carries the gate's output, gets it right. Publishes through $EPISODIC_OUTPUTS.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { answer, field, publish, readPrompt } from './stream.mjs';

const prompt = readPrompt();
const file = field(prompt, 'Module');
const name = field(prompt, 'Function');
if (!/^src\/[a-z-]+\.mjs$/.test(file) || !/^[a-z]+$/i.test(name)) {
  answer(`The prompt names no module and function (got "${file}", "${name}").`);
  process.exit(1);
}
const fixing = prompt.includes('checked your work and failed');
const body = fixing ? "title.trim().toLowerCase().split(/\\s+/).join('-')" : "title.trim().split(/\\s+/).join('-')";
mkdirSync(dirname(file), { recursive: true });
writeFileSync(file, `export function ${name}(title) {   \n  return ${body};\n}\n`);
publish({ MODULE: file, EXPORTS: name });
answer(fixing ? `Fixed ${name} in ${file}.` : `Wrote ${name} in ${file}. <promise>BUILT</promise>`);
