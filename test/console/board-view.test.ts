// The bounds the task page's blackboard, mailbox and changed paths are held to before they leave the server
// (board-view.ts, evidence/workspace.ts): table tests of the pure parts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  BOARD_KEYS_SHOWN,
  BOARD_VALUE_SHOWN,
  boardView,
  MESSAGES_SHOWN,
  mailView,
} from '../../controller/console/board-view.ts';
import { parseAddVerbose, parseNumstat } from '../../controller/executors/evidence/workspace.ts';

test('board view: keys in name order, the first 50, values cut, the rest counted', () => {
  const entries = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${String(i).padStart(2, '0')}`, 'v']));
  entries.k00 = 'x'.repeat(2000);
  const view = boardView(entries);
  assert.equal(view.entries.length, BOARD_KEYS_SHOWN);
  assert.equal(view.more, 10);
  assert.equal(view.entries[0]?.key, 'k00');
  assert.equal(view.entries[0]?.value.length, BOARD_VALUE_SHOWN);
  assert.deepEqual(boardView({}), { entries: [], more: 0 });
});

test('mail view: the first 20 messages as given (oldest first), texts cut', () => {
  const messages = Array.from({ length: 25 }, (_, i) => ({
    id: `m${i}`,
    from: 'p',
    at: `t${i}`,
    text: 'y'.repeat(5000),
  }));
  const view = mailView(messages);
  assert.equal(view.messages.length, MESSAGES_SHOWN);
  assert.equal(view.more, 5);
  assert.equal(view.messages[0]?.id, 'm0');
  assert.equal(view.messages[0]?.text.length, 1000);
});

test('numstat -z: counts as the shortstat gives them, binary files count no lines, paths kept as they are', () => {
  const out = '2\t1\ta.txt\0-\t-\timg.png\0' + '3\t0\t<b>\u202eevil\nname.txt\0';
  assert.deepEqual(parseNumstat(out), {
    filesChanged: 3,
    insertions: 5,
    deletions: 1,
    files: ['a.txt', 'img.png', '<b>\u202eevil\nname.txt'],
  });
  assert.deepEqual(parseNumstat(''), { filesChanged: 0, insertions: 0, deletions: 0, files: [] });
});

test('add --verbose: the paths of its add and remove lines, nothing else', () => {
  assert.deepEqual(
    parseAddVerbose("add 'a.txt'\nremove 'old dir/b.txt'\nwarning: in the working copy\nadd 'it''s'\n"),
    ['a.txt', 'old dir/b.txt', "it''s"],
  );
});
