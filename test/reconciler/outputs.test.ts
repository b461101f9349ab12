// Outputs in the pure reconciler: an ended episode's outputs become the task's (status.outputs) and its
// step's (status.steps[].outputs), the latest value per key, bounded; its record carries them and names in
// its message what went missing. Driven pass by pass through reconcile() as the loop would.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskSpec, AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { EpisodeResultInput } from '../../controller/api/episode-result.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { Action, ReconcileResult } from '../../controller/reconciler/reconcile.ts';
import { recordOutputs, TASK_OUTPUTS_MAX_KEYS } from '../../controller/reconciler/outputs.ts';

const T0 = Date.parse('2026-11-25T12:00:00.000Z');
const OFF = { noProgressEpisodes: 0, halfOpenEpisodes: 0, sameErrorEpisodes: 0 };

function spec(steps: boolean): AgentTaskSpec {
  return AgentTaskSpecSchema.parse({
    agent: { command: ['agent'] },
    breaker: OFF,
    backoff: { initialSeconds: 1, factor: 1, maxSeconds: 1 },
    ...(steps
      ? {
          steps: [
            { name: 'plan', prompt: 'plan', completion: { promise: 'PLANNED' } },
            { name: 'build', prompt: 'build {{steps.plan.outputs.FILES}}' },
          ],
        }
      : { prompt: 'work' }),
  });
}

/** Runs the episodes one after another; returns the status after each and each episode's record. */
function drive(taskSpec: AgentTaskSpec, episodes: EpisodeResultInput[]) {
  let status: AgentTaskStatus = emptyStatus();
  let minute = 0;
  const pass = (episode?: unknown): ReconcileResult => {
    const r = reconcile({
      namespace: 'default',
      name: 't',
      generation: 1,
      spec: taskSpec,
      status,
      dependencies: {},
      freeSlots: 1,
      now: new Date(T0 + ++minute * 60_000),
      jitter: 0,
      ...(episode ? { episode } : {}),
    } as Parameters<typeof reconcile>[0]);
    status = r.status;
    return r;
  };
  pass();
  const after: AgentTaskStatus[] = [];
  const records: Array<Extract<Action, { type: 'RecordEpisode' }>['record'] | undefined> = [];
  for (const result of episodes) {
    if (!status.currentEpisode) pass(); // after a failure's backoff (a minute passes per pass)
    const number = status.currentEpisode?.number;
    assert.ok(number, 'an episode runs');
    const r = pass({ number, state: 'finished', result: episodeResult(result) });
    after.push(status);
    records.push(
      r.actions.find((a): a is Extract<Action, { type: 'RecordEpisode' }> => a.type === 'RecordEpisode')?.record,
    );
  }
  return { after, records };
}

test('outputs: latest value per key on the task and per step, whatever the outcome; records carry them', () => {
  const { after, records } = drive(spec(true), [
    { exitCode: 1, outputs: { FILES: 'draft', KEEP: 'k' } }, // a failed plan episode still published
    { exitCode: 0, completion: 'promise', outputs: { FILES: 'a.ts b.ts' } },
    { exitCode: 0, outputs: { RESULT: 'built' } },
    { exitCode: 0, outputs: { FILES: 'c.ts' } },
  ]);
  const table: Array<[string, Record<string, string> | undefined, Array<Record<string, string> | undefined>]> = [
    ['after a failed plan episode', { FILES: 'draft', KEEP: 'k' }, [{ FILES: 'draft', KEEP: 'k' }, undefined]],
    ['plan succeeds', { KEEP: 'k', FILES: 'a.ts b.ts' }, [{ KEEP: 'k', FILES: 'a.ts b.ts' }, undefined]],
    [
      'build publishes',
      { KEEP: 'k', FILES: 'a.ts b.ts', RESULT: 'built' },
      [{ KEEP: 'k', FILES: 'a.ts b.ts' }, { RESULT: 'built' }],
    ],
    [
      'build republishes a plan key: the task has the latest, plan keeps its own',
      { KEEP: 'k', RESULT: 'built', FILES: 'c.ts' },
      [
        { KEEP: 'k', FILES: 'a.ts b.ts' },
        { RESULT: 'built', FILES: 'c.ts' },
      ],
    ],
  ];
  table.forEach(([name, task, steps], i) => {
    assert.deepEqual(after[i].outputs, task, name);
    assert.deepEqual(Object.keys(after[i].outputs ?? {}), Object.keys(task ?? {}), `${name}: latest last`);
    assert.deepEqual(
      after[i].steps?.map((s) => s.outputs),
      steps,
      name,
    );
  });
  assert.deepEqual(records[1]?.outputs, { FILES: 'a.ts b.ts' });
  assert.equal(records[1]?.step, 'plan');
  assert.equal(records[2]?.outputs?.RESULT, 'built');
});

test('outputs: a task without steps keeps status.outputs only; an episode publishing nothing changes nothing', () => {
  const { after } = drive(spec(false), [{ exitCode: 0, outputs: { A: '1' } }, { exitCode: 0 }]);
  assert.deepEqual(after[0].outputs, { A: '1' });
  assert.deepEqual(after[1].outputs, { A: '1' });
  assert.equal(after[1].steps, undefined);
});

test('outputs: the note of what went missing is in the record, beside and in its message', () => {
  const note = 'outputs dropped: "1x" (not a C identifier)';
  const { records } = drive(spec(false), [{ exitCode: 0, message: 'ok', outputs: { A: '1' }, outputsNote: note }]);
  assert.equal(records[0]?.outputsNote, note);
  assert.equal(records[0]?.message, `ok (${note})`);
  const long = drive(spec(false), [{ exitCode: 0, message: 'm'.repeat(1000), outputsNote: note }]).records[0];
  assert.ok(long?.message?.endsWith(`(${note})`), 'a long message is cut, the note kept');
  assert.ok((long?.message?.length ?? 0) <= 1000);
});

test('outputs: status.outputs keeps the most recently published keys; a step the bounds of one episode', () => {
  let status: AgentTaskStatus = {
    ...emptyStatus(),
    step: { index: 1, name: 's' },
    steps: [{ name: 's', phase: 'Running', episodes: 1, retries: 0, costUSD: 0 }],
  };
  for (let e = 0; e < 4; e++) {
    const outputs = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`E${e}_${i}`, 'v']));
    status = recordOutputs(status, episodeResult({ exitCode: 0, outputs }));
  }
  const keys = Object.keys(status.outputs ?? {});
  assert.equal(keys.length, TASK_OUTPUTS_MAX_KEYS);
  assert.equal(keys[0], 'E2_0', 'the two newest episodes');
  assert.deepEqual(
    Object.keys(status.steps?.[0].outputs ?? {}),
    Array.from({ length: 16 }, (_, i) => `E3_${i}`),
  );
});
