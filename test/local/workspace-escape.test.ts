// A workspace that leads out of the spec directory through a symlink is refused before anything is made
// outside it (issue 12, item 6): check first, create after.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, realpathSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { prepareWorkspace, WorkspaceError } from '../../controller/executors/local/workspace.ts';
import { tempDir } from '../support/local.ts';

const spec = (workspace: string) => AgentTaskSpecSchema.parse({ prompt: 'x', agent: { command: ['a'] }, workspace });

test('a symlinked parent leading outside: refused, and no directory is created out there', async () => {
  const root = tempDir();
  const outside = tempDir();
  symlinkSync(outside, join(root, 'link'));
  await assert.rejects(prepareWorkspace(root, join(root, 'task.yaml'), 't', spec('link/a/b')), (err: Error) => {
    assert.ok(err instanceof WorkspaceError);
    // One message with episodic validate and run (issue 17): the field, then what is wrong.
    assert.match(err.message, /^spec\.workspace: leads outside the spec directory through a symlink/);
    return true;
  });
  assert.equal(existsSync(join(outside, 'a')), false, 'nothing made outside the spec directory');
});

test('a dangling symlink on the way is refused, never followed', async () => {
  const root = tempDir();
  const outside = tempDir();
  symlinkSync(join(outside, 'not-yet'), join(root, 'dangling'));
  await assert.rejects(
    prepareWorkspace(root, join(root, 'task.yaml'), 't', spec('dangling/ws')),
    /passes through a symlink that leads nowhere/,
  );
  assert.equal(existsSync(join(outside, 'not-yet')), false);
});

test('nested missing directories inside the root are created; a symlink inside the root is fine', async () => {
  const root = tempDir();
  mkdirSync(join(root, 'real'));
  symlinkSync(join(root, 'real'), join(root, 'inner'));
  const ws = await prepareWorkspace(root, join(root, 'task.yaml'), 't', spec('inner/a/b'));
  assert.equal(ws, join(realpathSync(root), 'real', 'a', 'b'));
  assert.ok(existsSync(join(root, 'real', 'a', 'b')));
});
