// Error classes of failed episodes, through the analyzer as the executor uses it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createOutputAnalyzer } from '../../controller/executors/output/index.ts';
import type { OutputAnalysis, OutputSetting, ProcessExit } from '../../controller/executors/output/types.ts';

const NOW = new Date('2026-03-10T10:00:00Z');
const FIXTURES = new URL('../fixtures/agent-outputs/', import.meta.url);
const fixture = (name: string): string => readFileSync(new URL(name, FIXTURES), 'utf8');

function run(
  out: { stdout?: string; stderr?: string },
  exit: ProcessExit = { exitCode: 1 },
  format: OutputSetting = 'auto',
): OutputAnalysis {
  const analyzer = createOutputAnalyzer({ format, promise: 'COMPLETE', now: () => NOW });
  if (out.stdout) analyzer.write(out.stdout, 'stdout');
  if (out.stderr) analyzer.write(out.stderr, 'stderr');
  return analyzer.finish(exit);
}

const TRANSIENT = [
  'Error: 429 Too Many Requests',
  'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
  'request failed with status 503',
  'HTTP 502 from upstream',
  'status code: 500',
  'upstream returned 504 Gateway Timeout',
  'rate_limit_error: Number of request tokens has exceeded your per-minute rate limit',
  'Error: read ECONNRESET',
  'connect ETIMEDOUT 104.18.0.1:443',
  'connect ECONNREFUSED 127.0.0.1:443',
  'getaddrinfo EAI_AGAIN api.anthropic.com',
  'TypeError: fetch failed',
  'Error: socket hang up',
  'No messages returned',
  'stream disconnected before completion: error sending request',
  '[API Error: got status: RESOURCE_EXHAUSTED]',
];

const FATAL = [
  'Invalid API key · Please run /login',
  'API Error: 401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
  'API Error: 403 {"type":"error","error":{"type":"permission_error","message":"no access"}}',
  'unexpected status 401 Unauthorized: Missing bearer authentication',
  'API key not valid. Please pass a valid API key.',
  'OAuth token has expired. Please obtain a new token or refresh your existing token.',
  'Your credit balance is too low to access the Anthropic API.',
];

// Its own class: the spec decides what it means (completion.contextTooLong).
const CONTEXT_TOO_LONG = [
  'invalid_request_error: prompt is too long',
  "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
  '{"error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}}',
];

const NONE = [
  'Error: tests failed',
  'Reached maximum number of turns (30)',
  'exit status 1',
  'listening on port 5000',
  '',
];

for (const message of TRANSIENT) {
  test(`transient: ${message}`, () => {
    assert.equal(run({ stderr: `${message}\n` }).errorClass, 'transient');
    assert.equal(run({ stdout: `working…\n${message}\n` }).errorClass, 'transient');
  });
}

for (const message of FATAL) {
  test(`fatal: ${message}`, () => {
    assert.equal(run({ stderr: `${message}\n` }).errorClass, 'fatal');
  });
}

for (const message of CONTEXT_TOO_LONG) {
  test(`contextTooLong: ${message}`, () => {
    assert.equal(run({ stderr: `${message}\n` }).errorClass, 'contextTooLong');
  });
}

for (const message of NONE) {
  test(`none: ${JSON.stringify(message)}`, () => {
    assert.equal(run({ stderr: message }).errorClass, 'none');
  });
}

test('a successful run that mentions 429 or a usage limit is not an error', () => {
  for (const text of ['Handled the 429 Too Many Requests case.', "Documented: You've hit your limit · resets 3pm"]) {
    const a = run({ stdout: text }, { exitCode: 0 });
    assert.equal(a.errorClass, 'none');
    assert.equal(a.resetAt, undefined);
  }
});

test('an agent error with exit code 0 is still classified', () => {
  assert.equal(run({ stdout: fixture('claude-stream-overloaded.jsonl') }, { exitCode: 0 }).errorClass, 'transient');
});

test('old prose about 429 far above the end does not classify a failure', () => {
  const a = run({
    stdout: `Note: retry on 429 Too Many Requests.\n${'building…\n'.repeat(2000)}Error: tests failed\n`,
  });
  assert.equal(a.errorClass, 'none');
});

test('precedence: usageLimit beats transient (a limit also shows as 429)', () => {
  const a = run({ stderr: "Error: 429 Too Many Requests: You've hit your usage limit, try again in 2 hours\n" });
  assert.equal(a.errorClass, 'usageLimit');
  assert.equal(a.resetAt, '2026-03-10T12:00:00.000Z');
});

test('precedence: usageLimit beats fatal', () => {
  const a = run({ stderr: 'API Error: 403 forbidden — usage limit reached, reset at 7pm (UTC)\n' });
  assert.equal(a.errorClass, 'usageLimit');
  assert.equal(a.resetAt, '2026-03-10T19:00:00.000Z');
});

test('precedence: fatal beats transient retry chatter', () => {
  assert.equal(run({ stderr: 'retrying after status 503…\nError: 401 Unauthorized\n' }).errorClass, 'fatal');
  const claude = JSON.stringify({
    type: 'result',
    session_id: 's',
    is_error: true,
    result: 'Overloaded',
    api_error_status: 401,
  });
  assert.equal(run({ stdout: claude }).errorClass, 'fatal');
});

test('claude: api_error_status decides even with subtype success and bland text', () => {
  const result = (status: number) =>
    JSON.stringify({
      type: 'result',
      subtype: 'success',
      session_id: 's',
      is_error: true,
      result: 'Request failed',
      api_error_status: status,
    });
  assert.equal(run({ stdout: result(529) }).errorClass, 'transient');
  assert.equal(run({ stdout: result(500) }).errorClass, 'transient');
  assert.equal(run({ stdout: result(403) }).errorClass, 'fatal');
});

test('claude stream killed during api_retry: the retry status is the clue', () => {
  const lines = fixture('claude-stream-overloaded.jsonl').split('\n').slice(0, 3).join('\n');
  const a = run({ stdout: lines }, { exitCode: null, signal: 'SIGTERM' });
  assert.equal(a.format, 'claude');
  assert.equal(a.agentError, false);
  assert.equal(a.errorClass, 'transient');
});

test('codex: the terminal turn.failed decides, not earlier error chatter', () => {
  const events = [
    { type: 'thread.started', thread_id: 't' },
    { type: 'error', message: 'stream error: last status: 429 Too Many Requests; retrying 1/5' },
    { type: 'turn.failed', error: { message: 'model refused: content policy' } },
  ];
  const a = run({ stdout: events.map((e) => JSON.stringify(e)).join('\n') });
  assert.equal(a.agentError, true);
  assert.equal(a.errorClass, 'none');
  assert.equal(a.message, 'model refused: content policy');
});

test('codex killed mid-retry (no turn.failed): the chatter classifies', () => {
  const stdout = fixture('codex-exec-failed.jsonl').split('\n').slice(0, 4).join('\n');
  const a = run({ stdout }, { exitCode: null, signal: 'SIGKILL' });
  assert.equal(a.format, 'codex');
  assert.equal(a.agentError, false);
  assert.equal(a.errorClass, 'transient');
});

test('codex usage limit with a relative reset', () => {
  const failed = JSON.stringify({
    type: 'turn.failed',
    error: { message: "You've hit your usage limit. Upgrade to Pro or try again in 1 day 2 hours 30 minutes." },
  });
  const a = run({ stdout: `${JSON.stringify({ type: 'thread.started', thread_id: 't' })}\n${failed}\n` });
  assert.equal(a.errorClass, 'usageLimit');
  assert.equal(a.resetAt, '2026-03-11T12:30:00.000Z');
});

test('agent command not found: ENOENT and EACCES are fatal, exit 127 too', () => {
  const enoent = run({}, { exitCode: null, spawnErrorCode: 'ENOENT', spawnErrorMessage: 'spawn claude ENOENT' });
  assert.equal(enoent.errorClass, 'fatal');
  assert.equal(enoent.message, 'spawn claude ENOENT');
  assert.equal(run({}, { exitCode: null, spawnErrorCode: 'EACCES' }).errorClass, 'fatal');
  const shell = run({ stderr: 'sh: 1: claude: command not found\n' }, { exitCode: 127 });
  assert.equal(shell.errorClass, 'fatal');
  assert.equal(shell.message, 'sh: 1: claude: command not found');
});

test('our side failing to start the agent for a moment is transient: fork EAGAIN or ENOMEM', () => {
  const busy = run(
    {},
    { exitCode: null, spawnErrorCode: 'EAGAIN', spawnErrorMessage: 'cannot start claude: spawn EAGAIN' },
  );
  assert.equal(busy.errorClass, 'transient');
  assert.equal(busy.message, 'cannot start claude: spawn EAGAIN');
  assert.equal(run({}, { exitCode: null, spawnErrorCode: 'ENOMEM' }).errorClass, 'transient');
  assert.equal(run({}, { exitCode: null, spawnErrorCode: 'ENOENT' }).errorClass, 'fatal');
});

test('gemini exit codes: 42 fatal, 53 plain failure, 1 classified from text', () => {
  const stdout = fixture('gemini-json.json');
  assert.equal(run({ stdout, stderr: 'Error: 503 Service Unavailable' }, { exitCode: 42 }).errorClass, 'fatal');
  assert.equal(run({ stderr: 'Error: 503 Service Unavailable' }, { exitCode: 53 }, 'gemini').errorClass, 'none');
  assert.equal(run({ stdout, stderr: 'Error: 503 Service Unavailable' }, { exitCode: 53 }).errorClass, 'none');
  assert.equal(
    run({ stdout, stderr: '[API Error: got status: 429 Too Many Requests]' }, { exitCode: 1 }).errorClass,
    'transient',
  );
  assert.equal(run({ stdout, stderr: 'something else went wrong' }, { exitCode: 1 }).errorClass, 'none');
  // Exit 42/53 mean nothing special for other agents.
  assert.equal(run({ stderr: 'Error: 503 Service Unavailable' }, { exitCode: 53 }, 'text').errorClass, 'transient');
  assert.equal(run({ stderr: 'Error: 503 Service Unavailable' }, { exitCode: 42 }, 'claude').errorClass, 'transient');
});

test('gemini json error object is the agent verdict', () => {
  const doc = JSON.stringify({
    session_id: 's',
    error: { type: 'ApiError', message: '[API Error: You have exhausted your daily quota on this model.]', code: 429 },
  });
  const a = run({ stdout: doc }, { exitCode: 1 });
  assert.equal(a.format, 'gemini');
  assert.equal(a.agentError, true);
  assert.equal(a.errorClass, 'usageLimit');
  // Google's per-day quotas reset at midnight Pacific time (PDT here): 07:00 UTC.
  assert.equal(a.resetAt, '2026-03-11T07:00:00.000Z');
  const streamError = [
    { type: 'init', timestamp: 't', session_id: 's' },
    {
      type: 'result',
      timestamp: 't',
      status: 'error',
      error: { type: 'ApiError', message: 'got status: 503 UNAVAILABLE' },
      stats: {},
    },
  ];
  const b = run({ stdout: streamError.map((e) => JSON.stringify(e)).join('\n') }, { exitCode: 1 });
  assert.equal(b.agentError, true);
  assert.equal(b.errorClass, 'transient');
  assert.equal(b.message, 'got status: 503 UNAVAILABLE');
});

test('a prompt echoed on stderr (codex plain mode) is not the error, under the generic rules', () => {
  const prompt = 'Add retries. If the API answers HTTP 503 or says rate limit exceeded, back off.';
  const stderr = `OpenAI Codex v0.169.0\n--------\nuser\n${prompt}\nERROR: the sandbox crashed\n`;
  const analyse = (withPrompt: boolean) => {
    const analyzer = createOutputAnalyzer({
      format: 'text',
      promise: 'COMPLETE',
      now: () => NOW,
      prompt: withPrompt ? prompt : undefined,
      command: ['/opt/agent/run-codex.sh'],
    });
    analyzer.write(stderr, 'stderr');
    return analyzer.finish({ exitCode: 1 });
  };
  assert.equal(analyse(true).errorClass, 'none');
  assert.equal(analyse(false).errorClass, 'transient'); // what the prompt's words alone would have made of it
});

test('the agent command names the CLI whose rules judge plain text: argv[0] basename only', () => {
  const line = 'API Error: Request rejected (429) · This request would exceed your account’s rate limit.';
  const rule = (command: string[], format: OutputSetting = 'text') => {
    const analyzer = createOutputAnalyzer({ format, promise: 'COMPLETE', now: () => NOW, command });
    analyzer.write(`${line}\n`, 'stdout');
    return analyzer.finish({ exitCode: 1 }).rule;
  };
  assert.equal(rule(['claude', '-p']), 'claude.api-transient');
  assert.equal(rule(['/usr/local/bin/claude'], 'auto'), 'claude.api-transient');
  assert.equal(rule(['C:\\tools\\claude.exe']), 'claude.api-transient');
  // Not claude itself: the generic rules, which know this wording too.
  assert.equal(rule(['node', 'claude']), 'generic.transient');
  assert.equal(rule(['claude-wrapper']), 'generic.transient');
  // A JSON format named in the spec decides, whatever the command.
  assert.equal(rule(['codex'], 'claude'), 'claude.api-transient');
});
