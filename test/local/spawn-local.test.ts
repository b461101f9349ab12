// Spawned children and mailboxes with `episodic run`: deleting a parent's spec file deletes its children
// (their episodes stopped, their specs and mailboxes gone), and `episodic send` fills a task's mailbox.
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { LocalMailboxes } from '../../controller/sinks/local/mailboxes.ts';
import { LocalCreatedTasks } from '../../controller/sources/local/created-tasks.ts';
import { FAKE_CLAUDE, NODE, assertAllDead, readStatus, runCli, specDir, startCli, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';
import { readFileSync } from 'node:fs';

const pidsIn = (file: string) =>
  existsSync(file) ? readFileSync(file, 'utf8').split(/\s+/).filter(Boolean).map(Number) : [];

test('deleting the parent’s spec deletes its running child: episode stopped, spec document and mailbox gone', async () => {
  const dir = tempDir();
  const pidFile = join(dir, 'child-pids.txt');
  specDir([{ name: 'planner', script: { default: { mode: 'sleep', sleepSeconds: 300 } } }], { dir });
  const stateDir = join(dir, '.episodic');
  const owner = { kind: 'AgentTask' as const, namespace: 'default', name: 'planner', file: join(dir, 'planner.yaml') };
  const childSpec = {
    prompt: 'work',
    agent: {
      command: [NODE, FAKE_CLAUDE, '--fake-mode=sleep'],
      output: 'claude',
      env: [{ name: 'FAKE_AGENT_PID_FILE', value: pidFile }],
    },
    workspace: 'ws/planner-a',
    limits: { maxEpisodes: 3, episodeTimeoutSeconds: 300 },
  };
  await new LocalCreatedTasks({ stateDir }).create(owner, 'planner-a', childSpec);
  await new LocalMailboxes(stateDir).send('default', 'planner-a', { id: 'x.1.0', from: 'x', at: 'now', text: 'hi' });

  const run = startCli(['run', dir, '--watch', '--no-table']);
  try {
    await waitFor(
      'the child running',
      () => readStatus(dir, 'planner-a')?.status.currentEpisode?.number === 1 && pidsIn(pidFile).length > 0,
    );
    rmSync(join(dir, 'planner.yaml'));
    await waitFor(
      'the child let go',
      // The release removes the document, the status and the mailbox one after another: wait for all three.
      () =>
        !existsSync(join(stateDir, 'created/default/planner-a.yaml')) &&
        !readStatus(dir, 'planner-a') &&
        !existsSync(join(stateDir, 'mailboxes/default/planner-a')),
      30_000,
    );
    assert.equal(readStatus(dir, 'planner'), undefined, 'the parent is gone too');
    await assertAllDead(pidsIn(pidFile), 'the child’s episode');
  } finally {
    run.child.kill('SIGINT');
    await run.exited;
  }
});

test('episodic send: into the mailbox of a task of DIR, oldest first; no such task or a path as a name is refused', async () => {
  const dir = specDir([{ name: 'bob' }]);
  const first = await runCli(['send', 'bob', 'first message', dir, '--from', 'alice']);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /message person\.[a-z0-9.]+ sent to default\/bob/);
  assert.equal((await runCli(['send', 'bob', 'second', dir])).code, 0);
  const inbox = await new LocalMailboxes(join(dir, '.episodic')).read('default', 'bob');
  assert.deepEqual(
    inbox.map((m) => m.text),
    ['first message', 'second'],
  );
  assert.equal(inbox[0]?.from, 'alice');

  const nobody = await runCli(['send', 'nobody', 'x', dir]);
  assert.equal(nobody.code, 1);
  assert.match(nobody.stderr, /no task default\/nobody/);
  const path = await runCli(['send', '../bob', 'x', dir]);
  assert.equal(path.code, 2);
  const huge = await runCli(['send', 'bob', 'y'.repeat(5000), dir]);
  assert.equal(huge.code, 2);
  assert.match(huge.stderr, /1 to 4096 characters/);
});
