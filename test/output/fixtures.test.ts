// Every recorded agent output → the analysis the reconciler will see.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createOutputAnalyzer } from '../../controller/executors/output/index.ts';
import type { AnalyzerOptions, OutputAnalysis, OutputSetting } from '../../controller/executors/output/types.ts';

const FIXTURES = new URL('../fixtures/agent-outputs/', import.meta.url);
const NOW = new Date('2026-03-10T10:00:00Z');

function analyse(
  file: string,
  exitCode: number,
  format: OutputSetting = 'auto',
  extra: Partial<AnalyzerOptions> = {},
): OutputAnalysis {
  const analyzer = createOutputAnalyzer({ format, promise: 'COMPLETE', now: () => NOW, ...extra });
  analyzer.write(readFileSync(new URL(file, FIXTURES)), 'stdout');
  return analyzer.finish({ exitCode });
}

const zero = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

const EXPECTED: Array<{ file: string; exitCode: number; format: OutputSetting; expected: OutputAnalysis }> = [
  {
    file: 'claude-stream-success.jsonl',
    exitCode: 0,
    format: 'claude',
    expected: {
      format: 'claude',
      agentError: false,
      errorClass: 'none',
      completion: 'promise',
      costUSD: 0.0734,
      tokens: { input: 5050, output: 95, cacheRead: 23600, cacheWrite: 0 },
      message: 'Every item is done and the tests pass. <promise>COMPLETE</promise>',
    },
  },
  {
    file: 'claude-stream-overloaded.jsonl',
    exitCode: 1,
    format: 'claude',
    expected: {
      format: 'claude',
      agentError: true,
      errorClass: 'transient',
      rule: 'claude.api-transient',
      completion: undefined,
      costUSD: 0,
      tokens: zero,
      message: 'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    },
  },
  {
    file: 'claude-json-auth-error.json',
    exitCode: 1,
    format: 'claude',
    expected: {
      format: 'claude',
      agentError: true,
      errorClass: 'fatal',
      rule: 'claude.not-logged-in',
      completion: undefined,
      costUSD: 0,
      tokens: zero,
      message:
        'Invalid API key · Please run /login (give the agent ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN in agent.env)',
    },
  },
  {
    file: 'claude-json-max-turns.json',
    exitCode: 1,
    format: 'claude',
    expected: {
      format: 'claude',
      agentError: true,
      errorClass: 'none',
      completion: undefined,
      costUSD: 1.8421,
      tokens: { input: 412000, output: 15210, cacheRead: 1900000, cacheWrite: 20000 },
      message: 'Reached maximum number of turns (30)',
    },
  },
  {
    file: 'claude-text-usage-limit.txt',
    exitCode: 1,
    format: 'text',
    expected: {
      format: 'text',
      agentError: false,
      errorClass: 'usageLimit',
      rule: 'generic.usage-limit',
      resetAt: '2026-03-10T14:00:00.000Z', // 3pm CET (UTC+1) on the same day
      completion: undefined,
      costUSD: 0,
      tokens: zero,
      message: "You've hit your limit · resets 3pm (Europe/Berlin)",
    },
  },
  {
    file: 'codex-exec-success.jsonl',
    exitCode: 0,
    format: 'codex',
    expected: {
      format: 'codex',
      agentError: false,
      errorClass: 'none',
      completion: 'promise',
      costUSD: 0,
      tokens: { input: 315, output: 122, cacheRead: 24448, cacheWrite: 0 },
      message: 'Login endpoint implemented and tested. <promise>COMPLETE</promise>',
    },
  },
  {
    file: 'codex-exec-failed.jsonl',
    exitCode: 1,
    format: 'codex',
    expected: {
      format: 'codex',
      agentError: true,
      errorClass: 'transient',
      rule: 'codex.transient',
      completion: undefined,
      costUSD: 0,
      tokens: zero,
      message: 'exceeded retry limit, last status: 429 Too Many Requests',
    },
  },
  {
    file: 'gemini-json.json',
    exitCode: 0,
    format: 'gemini',
    expected: {
      format: 'gemini',
      agentError: false,
      errorClass: 'none',
      completion: 'promise',
      costUSD: 0,
      // input = prompt 18230 - cached 6000; output = candidates 412 + thoughts 368
      tokens: { input: 12230, output: 780, cacheRead: 6000, cacheWrite: 0 },
      message: 'Added the endpoint and its tests. <promise>COMPLETE</promise>',
    },
  },
  {
    file: 'gemini-stream.jsonl',
    exitCode: 0,
    format: 'gemini',
    expected: {
      format: 'gemini',
      agentError: false,
      errorClass: 'none',
      completion: undefined,
      costUSD: 0,
      tokens: { input: 4800, output: 320, cacheRead: 4000, cacheWrite: 0 },
      message: 'Added the endpoint; one item left.',
    },
  },
  {
    file: 'text-ralph-status.txt',
    exitCode: 0,
    format: 'text',
    expected: {
      format: 'text',
      agentError: false,
      errorClass: 'none',
      completion: 'exitSignal',
      costUSD: 0,
      tokens: zero,
      ralph: {
        status: 'COMPLETE',
        exitSignal: true,
        tasksCompleted: 2,
        filesModified: 3,
        testsStatus: 'PASSING',
        workType: 'IMPLEMENTATION',
      },
      message:
        'Implemented the retry classifier and its tests; all 48 tests pass. ---RALPH_STATUS--- STATUS: COMPLETE ' +
        'TASKS_COMPLETED_THIS_LOOP: 2 FILES_MODIFIED: 3 TESTS_STATUS: PASSING WORK_TYPE: IMPLEMENTATION ' +
        'EXIT_SIGNAL: true RECOMMENDATION: All plan items are checked off ---END_RALPH_STATUS---',
    },
  },
];

function normalise(a: OutputAnalysis): OutputAnalysis {
  return { ...a, completion: a.completion, costUSD: Math.round(a.costUSD * 1e9) / 1e9 };
}

for (const { file, exitCode, format, expected } of EXPECTED) {
  test(`${file} (auto) → ${expected.errorClass}, ${expected.completion ?? 'no completion'}`, () => {
    assert.deepEqual(normalise(analyse(file, exitCode)), expected);
  });
  test(`${file} (explicit ${format}) matches auto`, () => {
    assert.deepEqual(normalise(analyse(file, exitCode, format)), expected);
  });
}

test('every fixture file has an expectation', async () => {
  const { readdirSync } = await import('node:fs');
  // real/ holds the captures of the real CLIs, checked by real-captures.test.ts.
  const files = readdirSync(FIXTURES, { withFileTypes: true })
    .filter((f) => f.isFile() && f.name !== 'README.md')
    .map((f) => f.name);
  assert.deepEqual(files.sort(), EXPECTED.map((e) => e.file).sort());
});

test('plain-text output under an explicit JSON format degrades to text', () => {
  const a = analyse('claude-text-usage-limit.txt', 1, 'claude');
  assert.equal(a.format, 'text');
  assert.equal(a.errorClass, 'usageLimit');
  assert.equal(a.resetAt, '2026-03-10T14:00:00.000Z');
});

test('codex and gemini cost comes from pricing; claude keeps its reported cost', () => {
  const pricing = { inputPerMTok: 1.25, outputPerMTok: 10, cacheReadPerMTok: 0.125 };
  // 315 × 1.25 + 122 × 10 + 24448 × 0.125 = 4669.75 µ$
  assert.ok(Math.abs(analyse('codex-exec-success.jsonl', 0, 'auto', { pricing }).costUSD - 0.00466975) < 1e-12);
  // 12230 × 1.25 + 780 × 10 + 6000 × 0.125 = 23837.5 µ$
  assert.ok(Math.abs(analyse('gemini-json.json', 0, 'auto', { pricing }).costUSD - 0.0238375) < 1e-12);
  // 4800 × 1.25 + 320 × 10 + 4000 × 0.125 = 9700 µ$
  assert.ok(Math.abs(analyse('gemini-stream.jsonl', 0, 'auto', { pricing }).costUSD - 0.0097) < 1e-12);
  assert.equal(analyse('claude-stream-success.jsonl', 0, 'auto', { pricing }).costUSD, 0.0734);
});

test('a different promise value is not a completion', () => {
  const a = analyse('claude-stream-success.jsonl', 0, 'auto', { promise: 'DONE' });
  assert.equal(a.completion, undefined);
});

test('a failed exit with a usage limit on claude json stdout still finds the reset', () => {
  const analyzer = createOutputAnalyzer({ format: 'auto', promise: 'COMPLETE', now: () => NOW });
  analyzer.write(
    '{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1773158400","session_id":"s","total_cost_usd":0,"usage":{}}\n',
    'stdout',
  );
  const a = analyzer.finish({ exitCode: 1 });
  assert.equal(a.errorClass, 'usageLimit');
  assert.equal(a.resetAt, '2026-03-10T16:00:00.000Z');
});
