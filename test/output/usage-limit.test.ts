// Usage-limit recognition and reset-time parsing, including DST-sensitive zones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyText } from '../../controller/executors/output/classify.ts';
import { findUsageLimit, parseResetAt } from '../../controller/executors/output/usage-limit.ts';
import { nextWallClockTime } from '../../controller/executors/output/zoned-time.ts';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';

const CASES: Array<{ text: string; now: string; expected: string | undefined; why: string }> = [
  {
    text: "You've hit your limit · resets 3pm (Europe/Berlin)",
    now: '2026-03-10T10:00:00Z',
    expected: '2026-03-10T14:00:00.000Z',
    why: 'CET is UTC+1',
  },
  {
    text: "You've hit your limit · resets 3pm (Europe/Berlin)",
    now: '2026-07-01T10:00:00Z',
    expected: '2026-07-01T13:00:00.000Z',
    why: 'CEST is UTC+2',
  },
  {
    text: "You've hit your limit · resets 3pm (Europe/Berlin)",
    now: '2026-07-01T14:30:00Z',
    expected: '2026-07-02T13:00:00.000Z',
    why: '16:30 in Berlin: 3pm is tomorrow',
  },
  {
    text: '5-hour limit reached ∙ resets 3am (Europe/Berlin)',
    now: '2026-03-28T20:00:00Z',
    expected: '2026-03-29T01:00:00.000Z',
    why: 'across the spring-forward night: 3am is already CEST',
  },
  {
    text: 'usage limit reached, resets 4am (America/New_York)',
    now: '2026-03-08T04:00:00Z',
    expected: '2026-03-08T08:00:00.000Z',
    why: 'spring-forward morning: 4am is EDT though now is EST',
  },
  {
    text: 'Your limit will reset at 7pm (America/New_York).',
    now: '2026-01-15T12:00:00Z',
    expected: '2026-01-16T00:00:00.000Z',
    why: 'EST is UTC-5',
  },
  {
    text: 'Your limit will reset at 7pm (America/New_York).',
    now: '2026-07-15T12:00:00Z',
    expected: '2026-07-15T23:00:00.000Z',
    why: 'EDT is UTC-4',
  },
  {
    text: 'Your limit will reset at 7pm (America/New_York).',
    now: '2026-10-31T23:30:00Z',
    expected: '2026-11-02T00:00:00.000Z',
    why: 'past 7pm EDT Saturday; Sunday 7pm is EST after fall-back',
  },
  {
    text: 'usage limit reached… reset at 7pm (UTC)',
    now: '2026-03-10T18:00:00Z',
    expected: '2026-03-10T19:00:00.000Z',
    why: 'later today',
  },
  {
    text: 'usage limit reached… reset at 7pm (UTC)',
    now: '2026-03-10T20:00:00Z',
    expected: '2026-03-11T19:00:00.000Z',
    why: 'already past: rolls to tomorrow',
  },
  {
    text: 'usage limit reached… reset at 7pm (UTC)',
    now: '2026-03-10T19:03:00Z',
    expected: '2026-03-10T19:00:00.000Z',
    why: 'read just after the reset: not pushed a day out',
  },
  {
    text: 'usage limit reached, try again at 8:05 PM UTC',
    now: '2026-03-10T10:00:00Z',
    expected: '2026-03-10T20:05:00.000Z',
    why: 'h:mm PM with bare UTC',
  },
  {
    text: 'Session limit reached ∙ resets 12am (UTC)',
    now: '2026-03-10T10:00:00Z',
    expected: '2026-03-11T00:00:00.000Z',
    why: '12am is midnight',
  },
  {
    text: 'Session limit reached ∙ resets 12pm (UTC)',
    now: '2026-03-10T10:00:00Z',
    expected: '2026-03-10T12:00:00.000Z',
    why: '12pm is noon',
  },
  {
    text: 'Daily limit reached, resets 15:00 (Asia/Kolkata)',
    now: '2026-03-10T00:00:00Z',
    expected: '2026-03-10T09:30:00.000Z',
    why: '24-hour clock, half-hour zone',
  },
  {
    text: 'Weekly limit reached ∙ resets Oct 6, 1pm (America/Los_Angeles)',
    now: '2026-03-10T10:00:00Z',
    expected: '2026-10-06T20:00:00.000Z',
    why: 'a date, PDT',
  },
  {
    text: 'Weekly limit reached ∙ resets Jan 2 at 9am (UTC)',
    now: '2026-12-30T10:00:00Z',
    expected: '2027-01-02T09:00:00.000Z',
    why: 'a date in the next year',
  },
  {
    text: 'Claude AI usage limit reached|1735689600',
    now: '2024-12-31T20:00:00Z',
    expected: '2025-01-01T00:00:00.000Z',
    why: 'unix seconds',
  },
  {
    text: 'Claude AI usage limit reached|1735689600000',
    now: '2024-12-31T20:00:00Z',
    expected: '2025-01-01T00:00:00.000Z',
    why: 'unix milliseconds',
  },
  {
    text: "You've hit your usage limit. Try again in 2 hours 5 minutes.",
    now: '2026-03-10T10:00:00Z',
    expected: '2026-03-10T12:05:00.000Z',
    why: 'relative',
  },
  {
    text: 'You have exhausted your daily quota. Your quota will reset after 2h3m14s.',
    now: '2026-03-10T10:00:00Z',
    expected: '2026-03-10T12:03:14.000Z',
    why: 'compact relative',
  },
  {
    text: 'You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC.',
    now: '2026-03-10T10:00:00Z',
    expected: '2026-04-01T00:00:00.000Z',
    why: 'ISO date and time',
  },
  // What the real CLIs print (test/fixtures/agent-outputs/real/).
  {
    text: "You've hit your 5-hour limit · resets 7:13am (UTC)",
    now: '2026-11-23T05:13:00Z',
    expected: '2026-11-23T07:13:00.000Z',
    why: 'claude subscriber, 5-hour window',
  },
  {
    text: "You've hit your weekly limit · resets Nov 26, 5:13am (UTC)",
    now: '2026-11-23T05:13:00Z',
    expected: '2026-11-26T05:13:00.000Z',
    why: 'claude subscriber, weekly window days away',
  },
  {
    text: 'You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at Nov 26th, 2026 5:13 AM.',
    now: '2026-11-23T05:13:00Z',
    expected: '2026-11-26T05:13:00.000Z',
    why: 'codex: ordinal day and year',
  },
  {
    text: 'You’ve hit your usage limit. Try again at Jan 2nd, 2027 9:00 PM.',
    now: '2026-12-30T10:00:00Z',
    expected: '2027-01-02T21:00:00.000Z',
    why: 'codex: a date in the next year, capitalised',
  },
  {
    text: 'You’ve hit your usage limit. Try again at Jan 2nd, 2025 9:00 PM.',
    now: '2026-12-30T10:00:00Z',
    expected: undefined,
    why: 'a stated year in the past is no reset time',
  },
  {
    text: 'Resource has been exhausted (e.g. check quota).\nSuggested retry after 259200s.',
    now: '2026-11-23T05:13:00Z',
    expected: '2026-11-26T05:13:00.000Z',
    why: 'gemini: a long suggested retry',
  },
  { text: 'usage limit reached', now: '2026-03-10T10:00:00Z', expected: undefined, why: 'no time given' },
  {
    text: 'usage limit reached · resets 3pm (Mars/Olympus_Mons)',
    now: '2026-03-10T10:00:00Z',
    expected: undefined,
    why: 'unknown zone: no guess',
  },
  { text: 'usage limit reached · resets 25:00', now: '2026-03-10T10:00:00Z', expected: undefined, why: 'not a time' },
  {
    text: 'usage limit reached · resets 3 times a day',
    now: '2026-03-10T10:00:00Z',
    expected: undefined,
    why: 'a bare number is not a time',
  },
];

for (const { text, now, expected, why } of CASES) {
  test(`resetAt: ${text} @ ${now} (${why})`, () => {
    assert.equal(parseResetAt(text, new Date(now)), expected);
  });
}

test('no zone means the local zone', () => {
  const saved = process.env.TZ;
  try {
    process.env.TZ = 'Asia/Tokyo'; // UTC+9, no DST
    assert.equal(
      parseResetAt('5-hour limit reached ∙ resets 2am', new Date('2026-03-10T10:00:00Z')),
      '2026-03-10T17:00:00.000Z',
    );
    process.env.TZ = 'America/New_York';
    assert.equal(
      parseResetAt('usage limit reached, reset at 7pm', new Date('2026-07-15T12:00:00Z')),
      '2026-07-15T23:00:00.000Z',
    );
  } finally {
    if (saved === undefined) delete process.env.TZ;
    else process.env.TZ = saved;
  }
});

test('a time without a zone is read in the zone given (completion.resetTimeZone), else the local one', () => {
  const text = 'You’ve hit your usage limit. Upgrade to Pro or try again at 7:13 AM.';
  const now = new Date('2026-11-23T05:13:00Z');
  assert.equal(parseResetAt(text, now, 'Asia/Tokyo'), '2026-11-23T22:13:00.000Z'); // 7:13 JST is 22:13 UTC
  assert.equal(parseResetAt(text, now, 'America/New_York'), '2026-11-23T12:13:00.000Z');
  assert.equal(parseResetAt(text, now, 'UTC'), '2026-11-23T07:13:00.000Z');
});

test('completion.resetTimeZone must be a zone Intl knows', () => {
  const spec = (zone: string) =>
    AgentTaskSpecSchema.safeParse({ prompt: 'x', agent: { command: ['a'] }, completion: { resetTimeZone: zone } });
  assert.equal(spec('Europe/Berlin').success, true);
  assert.equal(spec('UTC').success, true);
  const bad = spec('Mars/Olympus_Mons');
  assert.equal(bad.success, false);
  assert.match(JSON.stringify(bad.error?.issues), /IANA time zone/);
});

test('usage-limit messages are recognised; rate limits and prose are not', () => {
  const limits = [
    "You've hit your 5-hour limit · resets 7:13am (UTC)",
    "You've hit your weekly limit",
    'You’ve hit your usage limit. Upgrade to Pro … or try again later.',
    "You've hit your limit · resets 3pm (Europe/Berlin)",
    'Claude AI usage limit reached|1735689600',
    '5-hour limit reached ∙ resets 2am',
    'Weekly limit reached ∙ resets Oct 6, 1pm',
    "You've hit your usage limit. Upgrade to Pro or try again later.",
    'error: usage_limit_reached',
    'You have exhausted your daily quota on this model.',
  ];
  for (const text of limits) assert.ok(findUsageLimit(text), text);
  const others = [
    'rate_limit_error: slow down',
    'Error: 429 Too Many Requests',
    'the limit of the sequence',
    'Reached maximum number of turns (30)',
    "API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later.",
    '[API Error: Resource has been exhausted (e.g. check quota).]\nPlease wait and try again later.',
  ];
  for (const text of others) assert.equal(findUsageLimit(text), undefined, text);
});

test('the reset clause is looked for from the limit line on, not in older text', () => {
  const a = findUsageLimit('build resets 9am daily\nnoise\nYou hit your limit · resets 3pm (UTC)');
  assert.equal(a?.line, 'You hit your limit · resets 3pm (UTC)');
  const c = classifyText(
    ['build resets 9am (UTC) daily\nnoise\nYou hit your limit · resets 3pm (UTC)'],
    [],
    new Date('2026-03-10T06:00:00Z'),
  );
  assert.equal(c.errorClass, 'usageLimit');
  assert.equal(c.resetAt, '2026-03-10T15:00:00.000Z');
});

test('nextWallClockTime in a DST gap lands after the jump', () => {
  // 02:30 does not exist in Berlin on 2026-03-29; the result must still be a real instant after now.
  const at = nextWallClockTime(new Date('2026-03-28T22:00:00Z'), { hour: 2, minute: 30 }, 'Europe/Berlin');
  assert.ok(at);
  assert.ok(at.getTime() >= Date.parse('2026-03-29T00:30:00Z') && at.getTime() <= Date.parse('2026-03-29T01:30:00Z'));
});
