import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import { formatTable, renderRows } from '../../controller/cli/live-table.ts';
import type { SpecTask } from '../../controller/sources/local/spec-files.ts';

test('live table rows: task, phase, episode k/max, cost, last outcome, next retry', () => {
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
  assert.deepEqual(rows[0], ['a', 'Waiting', '2/7', '$0.5000', 'transient', 'in 30s', 'Backoff']);
  assert.deepEqual(rows[1].slice(0, 3), ['team/b', 'Running', '3/7']);
  const text = formatTable(
    ['TASK', 'PHASE'],
    [
      ['a', 'Waiting'],
      ['longer-name', 'Running'],
    ],
  );
  assert.equal(text, 'TASK          PHASE\na             Waiting\nlonger-name   Running');
});
