#!/usr/bin/env node
// review: approves when the test step's published result says every case passed.
import { answer, field, readPrompt } from './stream.mjs';

const prompt = readPrompt();
const tests = field(prompt, 'Tests');
const ok = /^(\d+) of \1 passed$/.test(tests);
answer(
  ok
    ? `Tests: ${tests}. <output name="VERDICT">approved</output> <promise>APPROVED</promise>`
    : `Tests say "${tests}". <output name="VERDICT">changes requested</output>`,
);
