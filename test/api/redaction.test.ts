// The one redaction rule (ops, runner, forge, logger): URL userinfo, a known secret of SECRET_MIN or more
// characters and a credential-looking word become [redacted]; names stay; rejections quote an unknown op or
// field whole or not.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentSecrets, REDACTED, redact, SECRET_MIN } from '../../controller/api/redaction.ts';
import { parseOps, rejectionWords } from '../../controller/api/ops.ts';

test('redact: the agent’s env values and credential-looking words; names are left alone', () => {
  const secrets = agentSecrets({ agent: { env: [{ value: 'hunter2-horse' }, { value: 'short' }, {}] } });
  assert.deepEqual(secrets, ['hunter2-horse'], 'values under 8 characters are too common to hide');
  const cases: Array<[string, string]> = [
    ['set hunter2-horse', 'set [redacted]'],
    ['send to x-hunter2-horse-y: no such task', 'send to x-[redacted]-y: no such task'],
    ['set sk-ant-api03-abcdefghij', 'set [redacted]'],
    ['label ghp_abcdefghijklmnopqrstuvwxyz is not valid', 'label [redacted] is not valid'],
    ['xoxb-1234567890-abc glpat-abcdefghijk AKIAABCDEFGHIJKLMNOP', '[redacted] [redacted] [redacted]'],
    ['eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx.sig', '[redacted]'],
    ['spawn 0123456789abcdef0123456789abcdef', 'spawn [redacted]'],
    ['spawn planner-worker-2; set plan; del build.v2', 'spawn planner-worker-2; set plan; del build.v2'],
  ];
  for (const [text, want] of cases) assert.equal(redact(text, secrets), want, text);
});

test('redact: one rule for every caller — userinfo, known secrets from SECRET_MIN characters, longest first', () => {
  const token = 'tok3n-value-123';
  const cases: Array<[string, ReadonlyArray<string | undefined>, string]> = [
    ['cloning https://x-access-token:abc@github.com/o/r.git', [], `cloning https://${REDACTED}@github.com/o/r.git`],
    ['fatal: https://user@gitea.local/o/r: denied', [], `fatal: https://${REDACTED}@gitea.local/o/r: denied`],
    [`github GET /user -> 401: bad token ${token}`, [token], `github GET /user -> 401: bad token ${REDACTED}`],
    [`push failed: ${token}${token}`, [token, undefined], `push failed: ${REDACTED}${REDACTED}`],
    ['x'.repeat(SECRET_MIN - 1), ['x'.repeat(SECRET_MIN - 1)], 'x'.repeat(SECRET_MIN - 1)],
    ['y'.repeat(SECRET_MIN), ['y'.repeat(SECRET_MIN)], REDACTED],
    ['abc-long-secret and abc-long', ['abc-long', 'abc-long-secret'], `${REDACTED} and ${REDACTED}`],
    ['a forge answer quoting ghp_abcdefghijklmnopqrstuvwxyz', [], `a forge answer quoting ${REDACTED}`],
    ['no secrets here: main, v1.2, true', ['main', 'true'], 'no secrets here: main, v1.2, true'],
  ];
  for (const [text, secrets, want] of cases) assert.equal(redact(text, secrets), want, text);
});

test('parseOps: an unknown op or field longer than 32 characters is not quoted (a prefix could not be redacted)', () => {
  const long = `x${'y'.repeat(40)}`;
  const text = [
    JSON.stringify({ op: long }),
    JSON.stringify({ op: 'del', key: 'k', [long]: 1 }),
    JSON.stringify({ op: 'del', key: 'k', extra: 1 }),
  ].join('\n');
  const words = rejectionWords(parseOps(text).rejected);
  assert.ok(!words.includes('yyyy'), words);
  assert.match(words, /line 1: unknown op \(known: push/);
  assert.match(words, /line 2: del: unknown field 1 too long to show/);
  assert.match(words, /line 3: del: unknown field "extra"/);
});
