#!/usr/bin/env node
// The lint gate: no trailing blanks in src/. `--fix` removes them (a formatter's job).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';

const files = readdirSync('src').map((f) => `src/${f}`);
let bad = 0;
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  if (process.argv.includes('--fix')) writeFileSync(file, text.replace(/[ \t]+$/gm, ''));
  else
    for (const [i, line] of text.split('\n').entries()) {
      if (!/[ \t]$/.test(line)) continue;
      console.log(`${file}:${i + 1}: trailing blanks`);
      bad++;
    }
}
process.exit(bad > 0 ? 1 : 0);
