#!/usr/bin/env node
// plan: writes PLAN.md and publishes what implement needs in its final answer (<output name="KEY">).
import { writeFileSync } from 'node:fs';
import { answer, readPrompt } from './stream.mjs';

readPrompt();
writeFileSync('PLAN.md', '- [ ] src/slug.mjs: slugify(title) → lowercase words joined by "-"\n');
answer(
  [
    'PLAN.md lists one item.',
    '<output name="MODULE">src/slug.mjs</output>',
    '<output name="FUNCTION">slugify</output>',
    '<promise>PLANNED</promise>',
  ].join('\n'),
);
