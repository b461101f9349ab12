// Schedule trigger rules on an injected "now": ticks in time zones and across DST, the newest missed tick
// only, startingDeadlineSeconds, concurrencyPolicy, maxTotal, historyLimit; and template rendering.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTaskSpecSchema, DNS_LABEL_MAX, DNS_LABEL_PATTERN } from '../../controller/api/agent-task.ts';
import type { Phase } from '../../controller/api/agent-task-status.ts';
import { ScheduleSourceSchema, TRIGGER_NAME_MAX, validateTriggerSpec } from '../../controller/api/agent-trigger.ts';
import {
  decideSchedule,
  newestDueTick,
  nextTick,
  pastHistory,
  phaseWakesTrigger,
  TICK_LABEL,
  tickName,
} from '../../controller/reconciler/trigger-schedule.ts';
import type { ExistingTask } from '../../controller/reconciler/trigger-items.ts';
import { ITEM_TEXT_MAX } from '../../controller/api/agent-trigger.ts';
import { renderTaskSpec } from '../../controller/reconciler/trigger-template.ts';

const schedule = (cron: string, timeZone = 'UTC', over: Record<string, unknown> = {}) =>
  ScheduleSourceSchema.parse({ cron, timeZone, ...over });
const iso = (d: Date | undefined) => d?.toISOString();

test('ticks follow the time zone, and DST: a skipped 02:30 runs once at 03:00, a repeated 01:30 once', () => {
  const berlin = schedule('30 2 * * *', 'Europe/Berlin');
  assert.equal(iso(nextTick(berlin, new Date('2026-03-27T12:00:00Z'))), '2026-03-28T01:30:00.000Z', 'CET');
  assert.equal(iso(nextTick(berlin, new Date('2026-03-28T12:00:00Z'))), '2026-03-29T01:00:00.000Z', 'spring gap');
  assert.equal(iso(nextTick(berlin, new Date('2026-03-29T12:00:00Z'))), '2026-03-30T00:30:00.000Z', 'CEST');
  const ny = schedule('30 1 * * *', 'America/New_York');
  const fallBack = newestDueTick(ny, new Date('2026-11-01T04:00:00Z'), new Date('2026-11-01T07:00:00Z'));
  assert.equal(iso(fallBack?.tick), '2026-11-01T05:30:00.000Z');
  assert.equal(fallBack?.missed, 0, 'the repeated hour does not tick twice');
  assert.equal(iso(nextTick(schedule('0 9 * * 1-5'), new Date('2026-11-27T10:00:00Z'))), '2026-11-30T09:00:00.000Z');
});

test('a restart after downtime runs only the newest missed tick, and names it by its minute', () => {
  const hourly = schedule('0 * * * *');
  const due = newestDueTick(hourly, new Date('2026-11-25T08:30:00Z'), new Date('2026-11-25T12:10:00Z'));
  assert.equal(iso(due?.tick), '2026-11-25T12:00:00.000Z');
  assert.equal(due?.missed, 3);
  assert.equal(tickName('nightly', new Date('2026-11-25T12:00:00Z')), 'nightly-20261125-1200');
});

test('tickName: the tick in UTC to the minute, deterministic, a DNS label of at most 63 characters', () => {
  const long = 'a'.repeat(TRIGGER_NAME_MAX);
  const other = `${'a'.repeat(TRIGGER_NAME_MAX - 1)}b`;
  const cases: Array<[string, string, Date, string]> = [
    ['UTC, zero-padded', 'every-minute', new Date('2026-12-01T18:44:59.999Z'), 'every-minute-20261201-1844'],
    ['midnight, January', 'n', new Date('2027-01-01T00:00:00Z'), 'n-20270101-0000'],
    ['an offset time is named in UTC', 'berlin', new Date('2026-01-01T03:00:00+01:00'), 'berlin-20260101-0200'],
    ['49 characters still fit whole', 'b'.repeat(49), new Date('2026-12-01T18:44Z'), `${'b'.repeat(49)}-20261201-1844`],
    ['50 are cut and get a digest', long, new Date('2026-12-01T18:44Z'), `${'a'.repeat(44)}-160b-20261201-1844`],
  ];
  for (const [why, trigger, tick, want] of cases) {
    const name = tickName(trigger, tick);
    assert.equal(name, want, why);
    assert.ok(name.length <= DNS_LABEL_MAX && new RegExp(DNS_LABEL_PATTERN).test(name), `${why}: ${name}`);
    assert.equal(tickName(trigger, new Date(tick)), name, `${why}: deterministic`);
  }
  const tick = new Date('2026-12-01T18:44Z');
  assert.notEqual(tickName(long, tick), tickName(other, tick), 'two cut names sharing a prefix stay apart');
});

const running = (name: string, finished = false): ExistingTask => ({ name, finished, labels: {} });

test('decideSchedule: wait, create, exists, deadline, Forbid, Replace, Allow with maxConcurrency, maxTotal', () => {
  const base = {
    trigger: 'n',
    lastTick: new Date('2026-11-25T11:00:00Z'),
    now: new Date('2026-11-25T12:00:30Z'),
    existing: [] as ExistingTask[],
    maxConcurrency: 1,
    createdTotal: 0,
  };
  const tickTask = tickName('n', new Date('2026-11-25T12:00:00Z'));
  const decide = (over: Partial<typeof base> & { maxTotal?: number }, s = schedule('0 * * * *')) =>
    decideSchedule({ ...base, schedule: s, ...over });
  assert.deepEqual(decide({ lastTick: new Date('2026-11-25T12:00:00Z') }), {
    action: 'wait',
    next: new Date('2026-11-25T13:00:00Z'),
  });
  const created = decide({});
  assert.equal(created.action, 'create');
  assert.equal(created.action === 'create' && created.name, tickTask);
  assert.equal(decide({ existing: [running(tickTask, true)] }).action, 'skip', 'exists');
  // Made under the old name rule (minutes since the epoch), found by its tick label: not made again.
  const minute = String(Date.parse('2026-11-25T12:00:00Z') / 60_000);
  const oldName = { name: `n-${minute}`, finished: true, labels: { [TICK_LABEL]: minute } };
  assert.equal(decide({ existing: [oldName] }).action, 'skip', 'exists under its old name');
  assert.equal(decide({}, schedule('0 * * * *', 'UTC', { startingDeadlineSeconds: 10 })).action, 'skip');
  assert.equal(decide({}, schedule('0 * * * *', 'UTC', { startingDeadlineSeconds: 60 })).action, 'create');
  assert.equal(decide({ existing: [running('n-1')] }).action, 'skip', 'Forbid is the default');
  const replace = decide(
    { existing: [running('n-1'), running('n-0', true)] },
    schedule('0 * * * *', 'UTC', { concurrencyPolicy: 'Replace' }),
  );
  assert.deepEqual(replace.action === 'create' && replace.replace, ['n-1']);
  const allow = schedule('0 * * * *', 'UTC', { concurrencyPolicy: 'Allow' });
  assert.equal(decide({ existing: [running('n-1')], maxConcurrency: 2 }, allow).action, 'create');
  assert.equal(decide({ existing: [running('n-1')], maxConcurrency: 1 }, allow).action, 'skip');
  assert.equal(decide({ maxTotal: 3, createdTotal: 3 }).action, 'skip');
});

test('historyLimit deletes the oldest finished schedule tasks, never running ones', () => {
  const t = (tick: number, finished: boolean): ExistingTask => ({
    name: `n-${tick}`,
    finished,
    labels: { [TICK_LABEL]: String(tick) },
  });
  const existing = [t(1, true), t(5, true), t(3, true), t(7, false), t(2, true)];
  assert.deepEqual(pastHistory(existing, 2), ['n-2', 'n-1']);
  assert.deepEqual(pastHistory(existing, 0), ['n-5', 'n-3', 'n-2', 'n-1']);
});

test('historyLimit N keeps N finished tasks once the newest finished too (issue 28: 1 kept two)', () => {
  const t = (tick: number, finished: boolean): ExistingTask => ({
    name: `n-${tick}`,
    finished,
    labels: { [TICK_LABEL]: String(tick) },
  });
  // [what exists, historyLimit, what to delete]: the rule runs at a tick (the new task still running) and
  // again when a task finishes (phaseWakesTrigger, and `run` once its tasks settled).
  const cases: Array<[string, ExistingTask[], number, string[]]> = [
    ['at the tick: the new one runs, one finished kept', [t(1, true), t(2, false)], 1, []],
    ['the new one finished: the older goes', [t(1, true), t(2, true)], 1, ['n-1']],
    ['limit 2, three finished', [t(1, true), t(2, true), t(3, true)], 2, ['n-1']],
    ['limit 0: none kept', [t(1, true), t(2, false)], 0, ['n-1']],
    ['limit above the count', [t(1, true)], 3, []],
    ['a task without a tick label is not the schedule’s', [{ name: 'x', finished: true, labels: {} }], 0, []],
  ];
  for (const [name, existing, limit, want] of cases) assert.deepEqual(pastHistory(existing, limit), want, name);
});

test('a task’s phase change wakes its trigger: a report or a webhook on every move, a schedule when one finishes', () => {
  const schedule = { source: { schedule: {} } };
  const cases: Array<[string, Parameters<typeof phaseWakesTrigger>[0], Phase | undefined, boolean]> = [
    ['report, running', { report: {}, source: { gitea: {} } as never }, 'Running', true],
    ['webhook, running', { source: { webhook: {} } }, 'Running', true],
    ['forge poll without report', { source: {} }, 'Succeeded', false],
    ['schedule, running', schedule, 'Running', false],
    ['schedule, pending', schedule, undefined, false],
    ['schedule, succeeded', schedule, 'Succeeded', true],
    ['schedule, failed', schedule, 'Failed', true],
    ['schedule, needs review (finished for the trigger)', schedule, 'NeedsReview', true],
  ];
  for (const [name, spec, phase, want] of cases) assert.equal(phaseWakesTrigger(spec, phase), want, name);
});

test('cron and time zone are validated with the field named', () => {
  const bad = (source: unknown) => {
    const v = validateTriggerSpec({ source, template: { spec: { prompt: 'p', agent: { command: ['x'] } } } });
    return v.ok ? [] : v.errors;
  };
  assert.deepEqual(bad({ schedule: { cron: '0 * * * *', timeZone: 'Mars/Olympus' } }), [
    'spec.source.schedule.timeZone: unknown time zone "Mars/Olympus"',
  ]);
  assert.match(bad({ schedule: { cron: '61 * * * *' } })[0], /^spec\.source\.schedule\.cron: .*minute/);
  assert.match(bad({ schedule: { cron: '* * * *' } })[0], /^spec\.source\.schedule\.cron: expected five fields/);
  assert.deepEqual(bad({}), ['spec.source: exactly one of schedule, gitea, github or webhook']);
  assert.deepEqual(bad({ schedule: { cron: '0 * * * *' } }), []);
});

test('templates fill item fields into prompts only, bounded, in one pass', () => {
  const template = AgentTaskSpecSchema.parse({
    prompt: 'Fix #{{item.number}}: {{item.title}}\n{{ item.body }}\n{{item.comment}} {{task}} {{tick}}',
    agent: { command: ['agent', '{{item.title}}'], env: [{ name: 'T', value: '{{item.title}}' }] },
  });
  const spec = renderTaskSpec(template, {
    item: {
      number: 42,
      title: 'Title {{item.body}}',
      body: `x\u0000${'b'.repeat(20_000)}`,
      url: 'u',
      author: 'a',
      authorIsBot: false,
      labels: [],
      open: true,
      isPullRequest: false,
      updatedAt: '2026-11-25T00:00:00Z',
    },
  }) as { prompt: string; agent: { command: string[]; env: Array<{ value: string }> } };
  assert.ok(spec.prompt.startsWith('Fix #42: Title {{item.body}}\nxbbb'), 'one pass; NUL dropped');
  assert.ok(spec.prompt.includes('[… cut by episodic]'));
  assert.ok(spec.prompt.length < ITEM_TEXT_MAX.body + 200);
  assert.ok(spec.prompt.endsWith(' {{task}} {{tick}}'), 'no tick: left for later; {{task}} is the episode');
  assert.deepEqual(spec.agent.command, ['agent', '{{item.title}}'], 'argv is never filled');
  assert.equal(spec.agent.env[0].value, '{{item.title}}', 'env is never filled');
  assert.equal(template.prompt?.includes('{{item.number}}'), true, 'the template is not changed');
});
