// {{integrate.conflicts}}: the conflicted files' text a resolution episode reads is bounded, and cut the way
// every prompt text is cut (api/bounds.ts clipPrompt), so the agent is told in words that it was cut.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CONFLICTS_TEXT_MAX, PROMPT_CUT_MARK } from '../../controller/api/bounds.ts';
import { continueRebase } from '../../controller/git/integrate-git.ts';
import { tempDir } from '../support/local.ts';

const conflicted = (lines: number) => `<<<<<<< ours\n${'ours\n'.repeat(lines)}=======\ntheirs\n>>>>>>> theirs\n`;

test('conflict markers: small files whole; past CONFLICTS_TEXT_MAX cut to it, then the prompt cut mark', async () => {
  const dir = tempDir('episodic-conflicts-');
  writeFileSync(join(dir, 'small.txt'), conflicted(2));
  writeFileSync(join(dir, 'big.txt'), conflicted(4000));
  const small = await continueRebase(dir, ['small.txt']);
  assert.equal(small.ok ? undefined : small.markers, `--- small.txt\n${conflicted(2)}\n`);
  const big = await continueRebase(dir, ['small.txt', 'big.txt']);
  const markers = big.ok ? '' : big.markers;
  assert.ok(markers.endsWith(PROMPT_CUT_MARK), JSON.stringify(markers.slice(-40)));
  assert.equal(markers.length, CONFLICTS_TEXT_MAX + PROMPT_CUT_MARK.length);
  assert.ok(markers.startsWith(`--- small.txt\n${conflicted(2)}\n--- big.txt\n<<<<<<< ours\n`));
});
