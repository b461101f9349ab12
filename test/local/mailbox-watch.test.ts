// The local mailbox watch on real directories: a message names its task, whether its namespace and task
// directories are new, already there, or removed (a dropped mailbox) and made again; mailboxes holding
// messages when the watch starts are named at once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LocalMailboxWatch } from '../../controller/sinks/local/mailbox-watch.ts';
import { LocalMailboxes } from '../../controller/sinks/local/mailboxes.ts';
import { tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const message = (id: string) => ({ id, from: 'test', at: new Date().toISOString(), text: id });

test('local mailbox watch: new, existing and re-made directories; mailboxes full at start', async () => {
  const stateDir = tempDir();
  const mailboxes = new LocalMailboxes(stateDir);
  await mailboxes.send('default', 'early', message('m0'));
  const watch = new LocalMailboxWatch(stateDir);
  const seen: string[] = [];
  watch.subscribe((key) => seen.push(key));
  watch.start();
  try {
    assert.deepEqual(seen, ['default/early'], 'a mailbox with a message before the start');
    const expect = async (key: string, send: () => Promise<unknown>) => {
      seen.length = 0;
      await send();
      await waitFor(`an arrival for ${key}`, () => seen.includes(key));
    };
    await expect('default/a', () => mailboxes.send('default', 'a', message('m1'))); // new task directory
    await expect('default/a', () => mailboxes.send('default', 'a', message('m2'))); // existing one
    await expect('team/b', () => mailboxes.send('team', 'b', message('m3'))); // new namespace directory
    await mailboxes.drop('default', 'a');
    await expect('default/a', () => mailboxes.send('default', 'a', message('m4'))); // made again
    await expect('default/early', () => mailboxes.send('default', 'early', message('m5')));
  } finally {
    watch.stop();
  }
});
