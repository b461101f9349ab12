// The merge queue's entries (core/merge-queue-entries.ts): which tasks may share a push (a batch's lane). A task
// with queue gates, a pull request to merge through the forge, or one it awaits integrates alone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { emptyStatus } from '../../controller/api/agent-task-status.ts';
import { batchEntryOf } from '../../controller/core/merge-queue-entries.ts';
import type { QueuePulls, QueueTask } from '../../controller/core/merge-queue-ports.ts';

const task = (key: string, gates: unknown[] = []): QueueTask => ({
  key,
  spec: AgentTaskSpecSchema.parse({
    prompt: 'p',
    agent: { command: ['a'] },
    workspace: { git: { url: 'origin.git', ref: `work/${key}` } },
    integrate: { into: 'main', queue: 'q', gates },
  }),
  status: { ...emptyStatus(), phase: 'Succeeded', lastEpisode: undefined },
});
const place = { url: 'origin.git', into: 'main' };
const pulls = (answers: Record<string, 'awaiting' | { number: number }>): QueuePulls<QueueTask> => ({
  of: (t) => answers[t.key],
  open: () => Promise.reject(new Error('not opened in this test')),
});

test('batchEntryOf: gateless pushed tasks share a lane; gates, a PR or an awaited PR integrate alone', () => {
  const p = pulls({ 'ns/pr': { number: 7 }, 'ns/waits': 'awaiting' });
  const lane = (t: QueueTask) => batchEntryOf(t, place, p).lane;
  assert.equal(lane(task('ns/plain')), 'origin.git\nmain');
  assert.equal(lane(task('ns/gated', [{ name: 'test', check: ['true'] }])), undefined);
  assert.equal(lane(task('ns/pr')), undefined);
  assert.equal(lane(task('ns/waits')), undefined);
  assert.equal(batchEntryOf(task('ns/waits'), place, p).awaitingPull, true);
  assert.equal(batchEntryOf(task('ns/plain'), undefined, p).lane, undefined, 'no place (no git workspace): alone');
});
