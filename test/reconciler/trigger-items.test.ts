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
  addSkips,
  itemRun,
  judgeItem,
  newestOfItem,
  planItem,
  planItems,
  pollWaits,
  triggerLimits,
} from '../../controller/reconciler/trigger-items.ts';
import type { ForgeComment, ForgeItem, PermissionAnswer } from '../../controller/api/forge-item.ts';
import { isReportComment } from '../../controller/api/forge-item.ts';
import { reportMarker } from '../../controller/forge/types.ts';
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

test("the token's own user triggers like anyone; only comments carrying episodic's marker are never commands", () => {
  const rules = { ...LABELS, excludeAuthors: [], command: COMMAND.command };
  const own = item(4, { author: 'writer', labels: [] });
  const plan = (comments: ForgeComment[]) => planItem('fix', seen(own, comments), [], rules, permissionOf);
  assert.equal(planItem('fix', seen(item(4, { author: 'writer' })), [], rules, permissionOf)?.name, 'fix-4');
  assert.equal(plan([comment(5, 'writer')])?.name, 'fix-4', "the same person's /episodic");
  const report = `${reportMarker('fix/fix-4')}\n/episodic resume`;
  assert.equal(plan([comment(6, 'writer', report)]), undefined, 'a report comment, whoever wrote it');
  assert.equal(plan([comment(6, 'writer', `  ${reportMarker('x')}`)]), undefined, 'leading space');
  assert.equal(isReportComment(`quoting ${reportMarker('x')}`), false, 'a marker later in the text is a quote');
});

test('every item that gets no task is counted by why', () => {
  const rules: ItemRules = { labels: ['agent'], excludeAuthors: ['mallory'], command: COMMAND.command };
  const commandsOnly: ItemRules = { ...rules, labels: [] };
  const done = [task('fix-1', 1, true, 9)];
  const cases: Array<[string, ItemSeen, ExistingTask[], ItemRules, string]> = [
    ['closed', seen(item(1, { open: false })), [], rules, 'closed'],
    ['by a bot', seen(item(1, { authorIsBot: true })), [], rules, 'bot'],
    ['by an excluded author', seen(item(1, { author: 'mallory' })), [], rules, 'excludedAuthor'],
    ['no label', seen(item(1, { labels: [] })), [], rules, 'labelsMissing'],
    ['commands only, none', seen(item(1)), [], commandsOnly, 'noCommand'],
    ['a reader asked', seen(item(1, { labels: [] }), [comment(5, 'reader')]), [], rules, 'commandNotPermitted'],
    ['a bot asked', seen(item(1, { labels: [] }), [comment(5, 'writer', '/episodic', true)]), [], rules, 'bot'],
    ['mallory asked', seen(item(1, { labels: [] }), [comment(5, 'mallory')]), [], rules, 'excludedAuthor'],
    ['seen again, done', seen(item(1), [comment(9, 'writer')]), done, rules, 'taskExists'],
    ['a newer one from a reader', seen(item(1), [comment(12, 'reader')]), done, rules, 'commandNotPermitted'],
    [
      'a newer one while it runs',
      seen(item(1), [comment(12, 'writer')]),
      [task('fix-1', 1, false, 9)],
      rules,
      'taskRunning',
    ],
  ];
  for (const [name, s, existing, r, reason] of cases)
    assert.deepEqual(judgeItem('fix', s, existing, r, permissionOf), { kind: 'skip', reason }, name);
  const plan = planItems({
    trigger: 'fix',
    seen: [seen(item(1, { open: false })), seen(item(2, { labels: [] })), seen(item(3, { labels: [] })), seen(item(4))],
    existing: [],
    rules,
    permissionOf,
    maxConcurrency: 5,
    createdTotal: 0,
  });
  assert.deepEqual(plan.skipped, { closed: 1, labelsMissing: 2 });
  assert.deepEqual(addSkips({ closed: 2, bot: 1 }, plan.skipped), { closed: 3, bot: 1, labelsMissing: 2 });
  assert.equal(addSkips(undefined, {}), undefined, 'nothing skipped yet: no field');
});

test('a command whose author’s permission could not be read holds its item only, while it could decide', () => {
  const cannot = { unknown: "cannot read carol's permission: needs a repo admin" };
  const answers: Record<string, PermissionAnswer> = { ...PERMS, carol: cannot };
  const of = (u: string) => answers[u];
  const rules = { ...LABELS, command: COMMAND.command };
  const judge = (s: ItemSeen, existing: ExistingTask[] = []) => judgeItem('fix', s, existing, rules, of);
  const bare = item(1, { labels: [] });
  assert.deepEqual(judge(seen(bare, [comment(5, 'carol')])), { kind: 'undecided', reason: cannot.unknown });
  assert.deepEqual(judge(seen(item(1), [comment(5, 'carol')])), { kind: 'undecided', reason: cannot.unknown });
  const newer = judge(seen(bare, [comment(5, 'carol'), comment(7, 'writer')]));
  assert.equal(newer.kind === 'create' && newer.task.comment?.id, 7, 'a newer permitted command decides');
  const done = [task('fix-1', 1, true, 9)];
  assert.deepEqual(judge(seen(item(1), [comment(5, 'carol')]), done), { kind: 'skip', reason: 'taskExists' }, 'old');
  assert.equal(judge(seen(item(1), [comment(12, 'carol')]), done).kind, 'undecided', 'newer than the mark');
  const plan = planItems({
    trigger: 'fix',
    seen: [seen(bare, [comment(5, 'carol')]), seen(item(2))],
    existing: [],
    rules,
    permissionOf: of,
    maxConcurrency: 5,
    createdTotal: 0,
  });
  assert.deepEqual(
    plan.create.map((p) => p.name),
    ['fix-2'],
    'the other item moves',
  );
  assert.deepEqual(plan.undecided, [{ number: 1, reason: cannot.unknown }]);
  assert.deepEqual(pollWaits(plan, []), { undecided: plan.undecided, hold: true }, 'the cursor stays');
  const resume = { number: 9, reason: 'r' };
  const clear = { ...plan, undecided: [], held: 0 };
  assert.deepEqual(pollWaits(clear, []), { hold: false });
  assert.deepEqual(pollWaits(clear, [resume]), { undecided: [resume], hold: true });
  assert.deepEqual(pollWaits({ ...clear, held: 1 }, []), { hold: true }, 'maxConcurrency holds as before');
  const many = Array.from({ length: 30 }, (_, i) => ({ number: i + 1, reason: 'r' }));
  assert.equal(pollWaits(clear, many).undecided?.length, 20, 'bounded');
});

test("an item's runs: TRIGGER-N is 1, TRIGGER-N-K is K, the newest is the highest", () => {
  const cases: Array<[string, number]> = [
    ['fix-3', 1],
    ['fix-3-2', 2],
    ['fix-3-12', 12],
    ['fix-30', 0],
    ['fix-3-x', 0],
    ['fix-3-1', 0],
    ['other-3', 0],
  ];
  for (const [name, run] of cases) assert.equal(itemRun('fix', 3, name), run, name);
  const tasks = [task('fix-3', 3, true), task('fix-3-10', 3, false), task('fix-3-2', 3, true), task('fix-4', 4, true)];
  assert.equal(newestOfItem('fix', 3, tasks)?.name, 'fix-3-10');
  assert.equal(newestOfItem('fix', 5, tasks), undefined);
});
