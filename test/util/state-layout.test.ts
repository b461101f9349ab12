// The state directory's layout is a contract with what is already on disk: a path that moves orphans a
// user's records, holds and workspaces. Each builder is pinned here.
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import * as layout from '../../controller/util/state-layout.ts';

const S = '/state';
const at = new Date('2026-01-02T03:04:05.678Z');

test('every path under the state directory is where earlier versions put it', () => {
  const cases: Array<[string, string]> = [
    [layout.lockPath(S), 'lock'],
    [layout.controllerIdPath(S), 'id'],
    [layout.controllerLogPath(S), 'controller.log'],
    [layout.statusDir(S), 'status'],
    [layout.statusPath(S, 'ns', 't'), 'status/ns/t.json'],
    [layout.taskLogsDir(S, 'ns', 't'), 'logs/ns/t'],
    [layout.episodeLogPath(S, 'ns', 't', 3), 'logs/ns/t/episode-3.log'],
    [layout.promptScratchPath(S, 'ns', 't'), 'logs/ns/t/.prompt.md'],
    [layout.episodesPath(S, 'ns', 't'), 'logs/ns/t/episodes.jsonl'],
    [layout.deletedTaskRoot(S, 'ns', 't'), 'deleted/ns/t'],
    [layout.deletedTaskDir(S, 'ns', 't', at), 'deleted/ns/t/2026-01-02T03-04-05.678Z'],
    [layout.workspacesDir(S), 'workspaces'],
    [layout.stateWorkspaceDir(S, 'ns', 't'), 'workspaces/ns/t'],
    [layout.mailboxesDir(S), 'mailboxes'],
    [layout.mailboxDir(S, 'ns', 't'), 'mailboxes/ns/t'],
    [layout.resumeDir(S), 'resume'],
    [layout.resumeRequestPath(S, 'ns', 't'), 'resume/ns/t.json'],
    [layout.holdDir(S), 'suspend'],
    [layout.holdPath(S, 'ns', 't'), 'suspend/ns/t.json'],
    [layout.triggerStatusDir(S), 'triggers'],
    [layout.triggerStatusPath(S, 'ns', 'tr'), 'triggers/ns/tr.json'],
    [layout.createdDir(S), 'created'],
    [layout.createdSpecPath(S, 'ns', 't'), 'created/ns/t.yaml'],
    [layout.budgetsDir(S), 'budgets'],
    [layout.budgetPath(S, 'ns', 'b'), 'budgets/ns/b.json'],
    [layout.blackboardDir(S), 'blackboard'],
    [layout.blackboardPath(S, 'ns'), 'blackboard/ns.json'],
  ];
  for (const [got, want] of cases) assert.equal(got, join(S, want));
});

test('the state directory is --state-dir when given, else DIR/.episodic, absolute either way', () => {
  assert.equal(layout.resolveStateDir('specs'), resolve('specs', '.episodic'));
  assert.equal(layout.resolveStateDir('specs', 'elsewhere'), resolve('elsewhere'));
  assert.equal(layout.resolveStateDir('/a', '/b'), '/b');
});

test('an episode log is known by its name; nothing else in a logs directory is one', () => {
  assert.equal(layout.episodeOfLogFile('episode-12.log'), 12);
  for (const other of ['episodes.jsonl', '.prompt.md', 'episode-.log', 'episode-1.log.tmp', 'xepisode-1.log'])
    assert.equal(layout.episodeOfLogFile(other), undefined, other);
});
