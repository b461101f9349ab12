// Forge trigger rules: which items match, deterministic names (a poll, a webhook and a restart agree),
// re-triggering only by a newer command comment, bots and excludeAuthors never, and the limits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Permission } from '../../controller/api/agent-trigger.ts';
import {
  COMMENT_MARK_LABEL,
  ITEM_LABEL,
  isCommand,
  activeAfter,
  planItem,
  planItems,
  triggerLimits,
} from '../../controller/reconciler/trigger-items.ts';
import type { ForgeComment, ForgeItem } from '../../controller/api/forge-item.ts';
import type { ExistingTask, ItemRules, ItemSeen } from '../../controller/reconciler/trigger-items.ts';

const item = (number: number, over: Partial<ForgeItem> = {}): ForgeItem => ({
  number,
  title: `issue ${number}`,
  body: 'body',
  url: `http://forge/o/r/issues/${number}`,
  author: 'alice',
  authorIsBot: false,
  labels: ['agent'],
  open: true,
  isPullRequest: false,
  updatedAt: '2026-11-25T00:00:00Z',
  ...over,
});
const comment = (id: number, author: string, body = '/episodic', authorIsBot = false): ForgeComment => ({
  id,
  itemNumber: 1,
  author,
  body,
  authorIsBot,
  createdAt: '2026-11-25T00:00:00Z',
  updatedAt: '2026-11-25T00:00:00Z',
});
const seen = (i: ForgeItem, comments: ForgeComment[] = []): ItemSeen => ({ item: i, comments });
const task = (name: string, number: number, finished: boolean, mark = 0): ExistingTask => ({
  name,
  finished,
  labels: { [ITEM_LABEL]: String(number), [COMMENT_MARK_LABEL]: String(mark) },
});
const PERMS: Record<string, Permission> = { maint: 'maintain', writer: 'write', reader: 'read' };
const permissionOf = (u: string): Permission | undefined => PERMS[u];
const LABELS: ItemRules = { labels: ['agent'], excludeAuthors: ['mallory'] };
const COMMAND: ItemRules = { labels: [], excludeAuthors: [], command: { text: '/episodic', minPermission: 'write' } };

test('an open item with every label matches; closed, unlabelled, bot and excluded authors do not', () => {
  const cases: Array<[string, ForgeItem, boolean]> = [
    ['open + label', item(1), true],
    ['label in another case', item(1, { labels: ['Agent'] }), true],
    ['closed', item(1, { open: false }), false],
    ['no label', item(1, { labels: ['bug'] }), false],
    ['bot flag', item(1, { authorIsBot: true }), false],
    ['[bot] suffix', item(1, { author: 'renovate[bot]' }), false],
    ['excluded author', item(1, { author: 'Mallory' }), false],
  ];
  for (const [name, i, matches] of cases) {
    const plan = planItem('fix', seen(i), [], LABELS, permissionOf);
    assert.equal(plan?.name, matches ? 'fix-1' : undefined, name);
  }
});

test('a command comment triggers only from a user with at least minPermission, never a bot', () => {
  const cases: Array<[string, ForgeComment[], string | undefined]> = [
    ['writer', [comment(5, 'writer')], 'fix-7'],
    ['maintainer (above write)', [comment(5, 'maint', '/episodic  please')], 'fix-7'],
    ['reader', [comment(5, 'reader')], undefined],
    ['unknown user', [comment(5, 'stranger')], undefined],
    ['bot with write', [comment(5, 'writer', '/episodic', true)], undefined],
    ['command later in the text', [comment(5, 'writer', 'please run /episodic')], undefined],
    ['a longer word', [comment(5, 'writer', '/episodical')], undefined],
  ];
  for (const [name, comments, want] of cases) {
    const plan = planItem('fix', seen(item(7, { labels: [] }), comments), [], COMMAND, permissionOf);
    assert.equal(plan?.name, want, name);
    if (want) assert.equal(plan?.labels[COMMENT_MARK_LABEL], '5', name);
  }
  assert.equal(isCommand('  /episodic\nmore', '/episodic'), true);
});

test('the same poll seen again, or after a restart, plans nothing: the task of that name exists', () => {
  const rules = { ...LABELS, command: COMMAND.command };
  const s = seen(item(3), [comment(9, 'writer')]);
  const first = planItem('fix', s, [], rules, permissionOf);
  assert.equal(first?.name, 'fix-3');
  assert.equal(first?.labels[COMMENT_MARK_LABEL], '9');
  const existing = [{ name: 'fix-3', finished: false, labels: first?.labels ?? {} }];
  assert.equal(planItem('fix', s, existing, rules, permissionOf), undefined, 'running');
  assert.equal(planItem('fix', s, [{ ...existing[0], finished: true }], rules, permissionOf), undefined, 'finished');
});

test('a finished item runs again only for a newer permitted command comment, under the next name', () => {
  const done = [task('fix-3', 3, true, 9)];
  const again = (comments: ForgeComment[], existing = done) =>
    planItem('fix', seen(item(3), comments), existing, { ...LABELS, command: COMMAND.command }, permissionOf)?.name;
  assert.equal(again([comment(9, 'writer')]), undefined, 'the same comment');
  assert.equal(again([comment(12, 'reader')]), undefined, 'newer but not permitted');
  assert.equal(again([comment(12, 'writer')]), 'fix-3-2');
  assert.equal(again([comment(12, 'writer')], [task('fix-3', 3, false, 9)]), undefined, 'still running');
  assert.equal(again([comment(20, 'writer')], [...done, task('fix-3-2', 3, true, 12)]), 'fix-3-3');
});

test('maxConcurrency counts unfinished tasks; maxTotal counts every task created; lowest numbers first', () => {
  const all = [5, 2, 9, 4].map((n) => seen(item(n)));
  const plan = (existing: ExistingTask[], maxConcurrency: number, maxTotal?: number, createdTotal = 0) =>
    planItems({
      trigger: 'fix',
      seen: all,
      existing,
      rules: LABELS,
      permissionOf,
      maxConcurrency,
      maxTotal,
      createdTotal,
    });
  assert.deepEqual(
    plan([], 2).create.map((p) => p.name),
    ['fix-2', 'fix-4'],
  );
  assert.equal(plan([], 2).held, 2);
  assert.deepEqual(
    plan([task('fix-2', 2, false)], 2).create.map((p) => p.name),
    ['fix-4'],
  );
  assert.deepEqual(
    plan([task('fix-2', 2, true)], 10, 3, 2).create.map((p) => p.name),
    ['fix-4'],
  );
  assert.deepEqual(plan([], 10, 3, 3).create, []);
});

test('limits: createdTotal is the larger of the status count and the tasks there are; active adds the new ones', () => {
  const existing = [task('fix-1', 1, true), task('fix-2', 2, false), task('fix-3', 3, false)];
  const cases: Array<[number, number]> = [
    [0, 3], // the status lagged behind a restart: the tasks count
    [5, 5], // two were deleted since: the status remembers them
  ];
  for (const [created, want] of cases)
    assert.deepEqual(triggerLimits({ maxConcurrency: 2, maxTotal: 9 }, created, existing), {
      maxConcurrency: 2,
      maxTotal: 9,
      createdTotal: want,
    });
  assert.equal(activeAfter(existing, 0), 2);
  assert.equal(activeAfter(existing, 1), 3);
});
