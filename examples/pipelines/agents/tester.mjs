#!/usr/bin/env node
// test: exercises the module implement published, and publishes how many cases passed.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { answer, field, publish, readPrompt } from './stream.mjs';

const prompt = readPrompt();
const mod = await import(pathToFileURL(resolve(field(prompt, 'Module'))).href);
const fn = mod[field(prompt, 'Function')];
const cases = [
  ['A B', 'a-b'],
  ['Mixed Case Title', 'mixed-case-title'],
  ['one', 'one'],
];
const passed = cases.filter(([t, s]) => fn(t) === s).length;
publish({ TESTS: `${passed} of ${cases.length} passed` });
answer(passed === cases.length ? `All ${passed} cases pass. <promise>TESTED</promise>` : `${passed} pass.`);
