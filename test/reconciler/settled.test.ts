// Table tests of settled(): when `episodic run` is done, from the facts the loop gathers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { ResumeStatusSchema } from '../../controller/api/resume.ts';
import { settled, taskSettled } from '../../controller/reconciler/settled.ts';
import type { TaskSettleFacts } from '../../controller/reconciler/settled.ts';

const status = (over: Partial<AgentTaskStatus>): AgentTaskStatus => ({ ...emptyStatus(), ...over });
const autoResumeAt = { resume: ResumeStatusSchema.parse({ nextAutoResumeAt: '2026-11-22T12:01:00.000Z' }) };

const tasks: Array<{ name: string; task: TaskSettleFacts; settled: boolean }> = [
  { name: 'no status yet', task: { status: undefined, dependencyMissing: false }, settled: false },
  { name: 'Succeeded', task: { status: status({ phase: 'Succeeded' }), dependencyMissing: false }, settled: true },
  { name: 'Failed', task: { status: status({ phase: 'Failed' }), dependencyMissing: false }, settled: true },
  { name: 'Skipped', task: { status: status({ phase: 'Skipped' }), dependencyMissing: false }, settled: true },
  { name: 'Suspended', task: { status: status({ phase: 'Suspended' }), dependencyMissing: false }, settled: true },
  { name: 'Running', task: { status: status({ phase: 'Running' }), dependencyMissing: false }, settled: false },
  {
    name: 'NeedsReview, auto-resume held',
    task: { status: status({ phase: 'NeedsReview', reason: 'CircuitOpen' }), dependencyMissing: false },
    settled: true,
  },
  {
    name: 'NeedsReview, auto-resume scheduled: its cooldown is waited for',
    task: {
      status: status({ phase: 'NeedsReview', reason: 'CircuitOpen', ...autoResumeAt }),
      dependencyMissing: false,
    },
    settled: false,
  },
  {
    name: 'waiting on a task nobody defined: only an edit can change it',
    task: { status: status({ phase: 'Waiting', reason: 'DependenciesPending' }), dependencyMissing: true },
    settled: true,
  },
  {
    name: 'waiting on tasks that exist',
    task: { status: status({ phase: 'Waiting', reason: 'DependenciesPending' }), dependencyMissing: false },
    settled: false,
  },
  {
    name: 'a missing dependency of a task in backoff does not settle it',
    task: { status: status({ phase: 'Waiting', reason: 'Backoff' }), dependencyMissing: true },
    settled: false,
  },
];

for (const c of tasks) {
  test(`settled: a task ${c.name} → ${c.settled ? 'settled' : 'not settled'}`, () => {
    assert.equal(taskSettled(c.task), c.settled);
  });
}

const done: TaskSettleFacts = { status: status({ phase: 'Succeeded' }), dependencyMissing: false };
const running: TaskSettleFacts = { status: status({ phase: 'Running' }), dependencyMissing: false };

const loops: Array<{
  name: string;
  busy: boolean;
  runningEpisodes: number;
  tasks: TaskSettleFacts[];
  settled: boolean;
}> = [
  { name: 'no tasks, nothing busy', busy: false, runningEpisodes: 0, tasks: [], settled: true },
  { name: 'every task settled', busy: false, runningEpisodes: 0, tasks: [done, done], settled: true },
  { name: 'one task not settled', busy: false, runningEpisodes: 0, tasks: [done, running], settled: false },
  { name: 'work queued or in flight', busy: true, runningEpisodes: 0, tasks: [done], settled: false },
  { name: 'an episode still running', busy: false, runningEpisodes: 1, tasks: [done], settled: false },
];

for (const c of loops) {
  test(`settled: ${c.name} → ${c.settled}`, () => {
    assert.equal(settled({ busy: c.busy, runningEpisodes: c.runningEpisodes, tasks: c.tasks }), c.settled);
  });
}

test('settled: tasks are read only up to the first one that is not settled', () => {
  let read = 0;
  const tasks = function* () {
    for (const t of [done, running, done, done]) {
      read++;
      yield t;
    }
  };
  assert.equal(settled({ busy: false, runningEpisodes: 0, tasks: tasks() }), false);
  assert.equal(read, 2);
  read = 0;
  assert.equal(settled({ busy: true, runningEpisodes: 0, tasks: tasks() }), false);
  assert.equal(read, 0, 'busy: no status is read');
});
