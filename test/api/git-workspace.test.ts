// "Is this a git workspace" has one answer: gitWorkspaceOf, whatever shape the workspace has.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentTaskSpec } from '../../controller/api/agent-task.ts';
import { gitWorkspaceOf } from '../../controller/api/git-workspace.ts';

test('gitWorkspaceOf: the git source of a git workspace; undefined for a directory, a volume claim or none', () => {
  const git = { url: 'https://example.com/r.git', ref: 'main' };
  const cases: Array<[AgentTaskSpec['workspace'], typeof git | undefined]> = [
    [{ git }, git],
    ['ws/a', undefined],
    [{ volumeClaim: 'data' }, undefined],
    [undefined, undefined],
  ];
  for (const [workspace, want] of cases) assert.equal(gitWorkspaceOf(workspace), want, JSON.stringify(workspace));
});
