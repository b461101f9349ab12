// What of an op may be published: an env value of the task's agent or a credential-looking word becomes
// [redacted] in every text made from ops; names stay; rejections quote an unknown op or field whole or not.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentSecrets, redactOpText } from '../../controller/api/op-redaction.ts';
import { parseOps, rejectionWords } from '../../controller/api/ops.ts';

test('redactOpText: the agent’s env values and credential-looking words; names are left alone', () => {
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
  for (const [text, want] of cases) assert.equal(redactOpText(text, secrets), want, text);
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
