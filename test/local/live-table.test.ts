import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import {
  fitToScreen,
  formatElapsed,
  formatTable,
  LiveTable,
  renderRows,
  renderTotals,
  renderView,
} from '../../controller/cli/live-table.ts';
import type { SpecTask } from '../../controller/sources/local/spec-files.ts';

test('live table rows: task, phase, episodes counted/cap, retries, running time, progress, cost, last outcome, next retry', () => {
  const spec = AgentTaskSpecSchema.parse({ prompt: 'x', agent: { command: ['a'] }, limits: { maxEpisodes: 7 } });
  const task = (name: string, namespace = 'default'): SpecTask => ({
    key: `${namespace}/${name}`,
    namespace,
    name,
    file: 'f.yaml',
    spec,
    errors: [],
    specHash: 'h',
    manifest: {},
  });
  const now = Date.parse('2026-11-22T12:00:00Z');
  const rows = renderRows(
    [
      {
        task: task('a'),
        status: {
          ...emptyStatus(),
          phase: 'Waiting',
          episodes: 2,
          retries: 1,
          costUSD: 0.5,
          nextEpisodeAt: '2026-11-22T12:00:30Z',
          lastEpisode: { number: 2, outcome: 'transient' },
          reason: 'Backoff',
        },
      },
      {
        task: task('b', 'team'),
        status: {
          ...emptyStatus(),
          phase: 'Running',
          episodes: 3,
          currentEpisode: { number: 3, startedAt: '2026-11-22T11:59:00Z' },
        },
      },
    ],
    now,
  );
  // Two episodes started, one of them an outage: one counts against maxEpisodes 7.
  assert.deepEqual(rows[0], ['a', 'Waiting', '1/7', '1', '-', '-', '$0.5000', 'transient', 'in 30s', 'Backoff']);
  assert.deepEqual(rows[1].slice(0, 5), ['team/b', 'Running', '3/7', '0', '1m00s']);
  const text = formatTable(
    ['TASK', 'PHASE'],
    [
      ['a', 'Waiting'],
      ['longer-name', 'Running'],
    ],
  );
  assert.equal(text, 'TASK          PHASE\na             Waiting\nlonger-name   Running');
});

test('live table: elapsed time, granted episodes and checklist progress, a footer, lines that fit the screen', () => {
  assert.deepEqual([0, 59_999, 65_000, 3_600_000 + 180_000].map(formatElapsed), ['0s', '59s', '1m05s', '1h03m']);
  const spec = AgentTaskSpecSchema.parse({
    prompt: 'x',
    agent: { command: ['a'] },
    limits: { maxEpisodes: 3 },
    progress: { checklist: 'PLAN.md' },
  });
  const task: SpecTask = {
    key: 'default/p',
    namespace: 'default',
    name: 'p',
    file: 'f',
    spec,
    errors: [],
    specHash: 'h',
    manifest: {},
  };
  const status = {
    ...emptyStatus(),
    episodes: 9,
    retries: 6,
    costUSD: 1.5,
    resume: { autoResumes: 0, grantedEpisodes: 2 },
    progress: { done: 7, total: 12, inProgress: 0, failed: 0, skipped: 0, summary: '7/12' },
  };
  const [row] = renderRows([{ task, status }]);
  assert.deepEqual([row[2], row[3], row[5]], ['3/5', '6', '7/12']);
  assert.equal(
    renderTotals([
      { task, status },
      { task, status },
    ]),
    '2 tasks, 0 running, total cost $3.0000',
  );
  const lines = Array.from({ length: 30 }, (_, i) => `line ${i} ${'x'.repeat(100)}`);
  const fitted = fitToScreen(lines, 40, 10);
  assert.equal(fitted.length, 9, 'one row short of the screen, so cursor-up always reaches the top line');
  assert.ok(fitted.every((l) => l.length < 40));
  assert.match(fitted[7], /… 22 more tasks/);
  assert.match(fitted[8], /^line 29/);
  assert.deepEqual(fitToScreen(['a', 'b'], undefined, undefined), ['a', 'b']);
});

test('the final table says why each task that did not succeed stopped, one line each, cut to the width', () => {
  const spec = AgentTaskSpecSchema.parse({ prompt: 'x', agent: { command: ['a'] } });
  const task = (name: string): SpecTask => ({
    key: `default/${name}`,
    namespace: 'default',
    name,
    file: 'f',
    spec,
    errors: [],
    specHash: 'h',
    manifest: {},
  });
  let out = '';
  LiveTable.print(
    [
      { task: task('done'), status: { ...emptyStatus(), phase: 'Succeeded', message: 'finished' } },
      {
        task: task('stuck'),
        status: { ...emptyStatus(), phase: 'Skipped', message: `3 failures \u001b[2J ${'x'.repeat(200)}` },
      },
    ],
    { write: (t) => (out += t), columns: 80 },
  );
  const lines = out.trimEnd().split('\n');
  assert.match(lines.at(-1) ?? '', /^stuck: 3 failures \\x1b\[2J x+…$/);
  assert.ok(lines.every((l) => l.length < 80));
  assert.doesNotMatch(out, /done: finished/);
});

test('live table of a pipeline: EPISODE counts the current step against its own maxEpisodes, STEP names it', () => {
  const spec = AgentTaskSpecSchema.parse({
    agent: { command: ['a'] },
    limits: { maxEpisodes: 10 },
    steps: [
      { name: 'plan', prompt: 'p' },
      { name: 'implement', prompt: 'i', limits: { maxEpisodes: 4 } },
      { name: 'review', prompt: 'r' },
    ],
  });
  const task: SpecTask = {
    key: 'default/pipe',
    namespace: 'default',
    name: 'pipe',
    file: 'f',
    spec,
    errors: [],
    specHash: 'h',
    manifest: {},
  };
  const record = { phase: 'Running' as const, retries: 0, costUSD: 0 };
  const status = {
    ...emptyStatus(),
    phase: 'Running' as const,
    episodes: 5,
    retries: 1,
    resume: { autoResumes: 0, grantedEpisodes: 3 },
    step: { index: 2, name: 'implement', summary: '2/3 implement' },
    steps: [
      { ...record, name: 'plan', phase: 'Succeeded' as const, episodes: 2 },
      // Started after one grant: the two granted since count for this step.
      { ...record, name: 'implement', episodes: 3, retries: 1, grantBase: 1 },
      { ...record, name: 'review', phase: 'Pending' as const, episodes: 0 },
    ],
  };
  const [row] = renderRows([{ task, status }]);
  assert.deepEqual(row.slice(0, 5), ['pipe', 'Running', '2/6', '2/3 implement', '1']);
  assert.match(renderView([{ task, status }])[0], /^TASK\s+PHASE\s+EPISODE\s+STEP\s+RETRIES\s/);
  // A task without steps beside it: no step, no cell shifted.
  const plain = { ...task, name: 'plain', spec: { ...spec, steps: undefined } };
  const rows = renderRows([
    { task, status },
    { task: plain, status: { ...emptyStatus(), episodes: 2 } },
  ]);
  assert.deepEqual(rows[1].slice(0, 5), ['plain', 'Pending', '2/10', '-', '0']);
});
