// `episodic get NAME`'s merge-queue lines (issue 32 §3), table-tested from statuses: the PR the queue merged
// through the forge, the forge's refusal, and the lines of a pushed task unchanged.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import type { IntegrateStatus } from '../../controller/api/integrate.ts';
import { integrateLines } from '../../controller/cli/get-integrate.ts';

const withQueue = (integrate: Partial<IntegrateStatus>) => ({
  ...emptyStatus(),
  integrate: { queue: 'q', result: 'queued', attempts: 0, episodes: 0, ...integrate } as IntegrateStatus,
});

test('get: the merge queue lines name the PR it merged and quote the forge refusing it', () => {
  const cases: Array<[string, Partial<IntegrateStatus>, string[]]> = [
    [
      'pushed',
      { result: 'integrated', commit: 'a'.repeat(40), attempts: 1 },
      [`Merge queue q: integrated at ${'a'.repeat(12)}; 1 rebase, 0 resolution episodes`],
    ],
    [
      'merged through the forge',
      { result: 'integrated', commit: 'b'.repeat(40), attempts: 1, pullRequest: 2 },
      [`Merge queue q: integrated at ${'b'.repeat(12)} (pull request #2); 1 rebase, 0 resolution episodes`],
    ],
    [
      'refused by the forge',
      { result: 'needsReview', attempts: 1, pullRequest: 7, forge: 'gitea POST /repos/o/r/pulls/7/merge -> 405' },
      [
        'Merge queue q: needsReview (pull request #7); 1 rebase, 0 resolution episodes',
        '  forge refused: gitea POST /repos/o/r/pulls/7/merge -> 405',
      ],
    ],
    [
      'a refusal with control characters stays one line',
      { result: 'needsReview', pullRequest: 3, forge: 'no\n\u001b[31mred' },
      [
        'Merge queue q: needsReview (pull request #3); 0 rebases, 0 resolution episodes',
        '  forge refused: no\\n\\x1b[31mred',
      ],
    ],
  ];
  for (const [name, integrate, lines] of cases) assert.deepEqual(integrateLines(withQueue(integrate)), lines, name);
  assert.deepEqual(integrateLines(emptyStatus()), [], 'never queued: no lines');
});
