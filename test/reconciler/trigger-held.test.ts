// Webhook items held back by maxConcurrency: which held and delivered items become tasks now, in item
// order, deduplicated against existing tasks, the rest kept (bounded) or counted as dropped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HeldItem, Permission } from '../../controller/api/agent-trigger.ts';
import { HELD_ITEMS_MAX } from '../../controller/api/agent-trigger.ts';
import type { ForgeItem } from '../../controller/api/forge-item.ts';
import { fromHeld, planWithHeld } from '../../controller/reconciler/trigger-held.ts';
import type { ExistingTask, ItemRules, ItemSeen } from '../../controller/reconciler/trigger-items.ts';
import { COMMENT_MARK_LABEL, ITEM_LABEL } from '../../controller/reconciler/trigger-items.ts';

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
const held = (number: number, over: Partial<HeldItem> = {}): HeldItem => ({
  number,
  title: `issue ${number}`,
  body: 'body',
  url: `http://forge/o/r/issues/${number}`,
  author: 'alice',
  labels: ['agent'],
  ...over,
});
const seen = (i: ForgeItem): ItemSeen => ({ item: i, comments: [] });
const task = (number: number, finished: boolean): ExistingTask => ({
  name: `fix-${number}`,
  finished,
  labels: { [ITEM_LABEL]: String(number), [COMMENT_MARK_LABEL]: '0' },
});
const LABELS: ItemRules = { labels: ['agent'], excludeAuthors: [] };
const COMMAND: ItemRules = { labels: [], excludeAuthors: [], command: { text: '/episodic', minPermission: 'write' } };
const nobody = (): Permission | undefined => undefined;

interface Case {
  name: string;
  seen?: ItemSeen[];
  held?: HeldItem[];
  existing?: ExistingTask[];
  rules?: ItemRules;
  maxConcurrency?: number;
  maxTotal?: number;
  created?: string[];
  stillHeld?: number[];
  overflow?: number;
}

const cases: Case[] = [
  { name: 'a slot free: the delivered item is created', seen: [seen(item(1))], created: ['fix-1'], stillHeld: [] },
  {
    name: 'no slot: the delivered item is held',
    seen: [seen(item(2))],
    existing: [task(1, false)],
    created: [],
    stillHeld: [2],
  },
  {
    name: 'a slot freed, no delivery: the held item is created',
    held: [held(2)],
    existing: [task(1, true)],
    created: ['fix-2'],
    stillHeld: [],
  },
  {
    name: 'held and delivered together: lowest number first, the rest stays held in order',
    seen: [seen(item(5))],
    held: [held(3), held(4)],
    existing: [task(1, true)],
    created: ['fix-3'],
    stillHeld: [4, 5],
  },
  {
    name: 'a held item whose task exists (a poll or a redelivery made it) is dropped',
    held: [held(2), held(3)],
    existing: [task(2, false)],
    maxConcurrency: 2,
    created: ['fix-3'],
    stillHeld: [],
  },
  {
    name: 'a redelivered held item is planned once',
    seen: [seen(item(2))],
    held: [held(2)],
    created: ['fix-2'],
    stillHeld: [],
  },
  {
    name: 'a redelivered held item that no longer matches (label removed) is no longer held',
    seen: [seen(item(2, { labels: [] }))],
    held: [held(2)],
    existing: [task(1, false)],
    created: [],
    stillHeld: [],
  },
  {
    name: 'maxTotal reached: held stays held',
    held: [held(2)],
    existing: [task(1, true)],
    maxTotal: 1,
    created: [],
    stillHeld: [2],
  },
  {
    name: 'a held command comment stays permitted (judged when it was held)',
    held: [held(7, { labels: [], comment: { id: 70, author: 'writer', body: '/episodic' } })],
    rules: COMMAND,
    created: ['fix-7'],
    stillHeld: [],
  },
  {
    name: 'past the cap: the lowest numbers are kept, the rest counted',
    seen: Array.from({ length: HELD_ITEMS_MAX + 3 }, (_, i) => seen(item(i + 2))),
    existing: [task(1, false)],
    created: [],
    stillHeld: Array.from({ length: HELD_ITEMS_MAX }, (_, i) => i + 2),
    overflow: 3,
  },
];

test('planWithHeld: which held and delivered items become tasks now', () => {
  for (const c of cases) {
    const plan = planWithHeld({
      trigger: 'fix',
      seen: c.seen ?? [],
      held: c.held ?? [],
      existing: c.existing ?? [],
      rules: c.rules ?? LABELS,
      permissionOf: nobody,
      maxConcurrency: c.maxConcurrency ?? 1,
      maxTotal: c.maxTotal,
      createdTotal: (c.existing ?? []).length,
    });
    assert.deepEqual(
      plan.create.map((p) => p.name),
      c.created,
      c.name,
    );
    assert.deepEqual(
      plan.held.map((h) => h.number),
      c.stillHeld,
      c.name,
    );
    assert.equal(plan.overflow, c.overflow ?? 0, c.name);
  }
});

test('a held item keeps the fields the template and branch need, its text bounded', () => {
  const plan = planWithHeld({
    trigger: 'fix',
    seen: [
      seen(item(2, { title: 't'.repeat(1000), body: 'b'.repeat(20_000), isPullRequest: true, headBranch: 'feat' })),
    ],
    held: [],
    existing: [task(1, false)],
    rules: LABELS,
    permissionOf: nobody,
    maxConcurrency: 1,
    createdTotal: 1,
  });
  const [h] = plan.held;
  assert.ok(h);
  assert.equal(h.title.length, 256);
  assert.equal(h.body.length, 8192);
  const back = fromHeld(h).item;
  assert.equal(back.isPullRequest, true);
  assert.equal(back.headBranch, 'feat');
  assert.equal(back.url, 'http://forge/o/r/issues/2');
});
