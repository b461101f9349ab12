// The --max-concurrent rule (reconciler/slots.ts): resolution episodes of the merge queue take a slot as a
// task's episodes do, so no more than maxConcurrent agents run at once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { freeSlots } from '../../controller/reconciler/slots.ts';
import type { SlotFacts } from '../../controller/reconciler/slots.ts';

const base: SlotFacts = { maxConcurrent: 2, episodes: 0, reserved: 0, resolutions: 0, stopping: false };

const rows: Array<[string, Partial<SlotFacts>, number]> = [
  ['nothing runs: every slot is free', {}, 2],
  ['one episode runs: one left', { episodes: 1 }, 1],
  ['a reserved start counts as running', { episodes: 1, reserved: 1 }, 0],
  ['a resolution episode takes a slot', { resolutions: 1 }, 1],
  ['an episode and a resolution episode fill two slots', { episodes: 1, resolutions: 1 }, 0],
  ['two resolution episodes (two queues) fill two slots', { resolutions: 2 }, 0],
  ['more running than allowed (the flag lowered on a restart): none free, never negative', { episodes: 3 }, 0],
  ['stopping: nothing starts, even with free slots', { stopping: true }, 0],
  ['--max-concurrent 1 with a resolution episode running: a task waits', { maxConcurrent: 1, resolutions: 1 }, 0],
];

for (const [name, facts, free] of rows) {
  test(`freeSlots: ${name}`, () => {
    assert.equal(freeSlots({ ...base, ...facts }), free);
  });
}
