// `episodic logs` renders an episode log for a person: the agent's messages, one line per tool call, the
// result with its cost, for what the three CLIs really print (test/fixtures/agent-outputs/real/) and plain
// text; a header per episode; --raw for the bytes; agent-written escape sequences shown escaped.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { LOG_LINE_MAX_BYTES } from '../../controller/api/bounds.ts';
import { LogRenderer } from '../../controller/executors/output/log-render.ts';
import { runCli, specDir } from '../support/local.ts';

const REAL = join(import.meta.dirname, '../fixtures/agent-outputs/real');
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/** Renders text fed in pieces of `piece` bytes (a log read while it grows is cut anywhere, in a character too). */
function render(text: string, width = 100, piece = 7): string {
  let out = '';
  const renderer = new LogRenderer((t) => (out += t), width);
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += piece) renderer.push(bytes.subarray(i, i + piece));
  renderer.end();
  return out;
}
const fixture = (path: string) => readFileSync(join(REAL, path), 'utf8');

test('claude stream-json and json: the answer and the result with its cost, no JSON', () => {
  for (const file of ['claude-2.1.330/stream-json.ok.stdout', 'claude-2.1.330/json.ok.stdout']) {
    const out = render(fixture(file));
    assert.match(out, /^All steps are finished and checked\. <promise>DONE<\/promise>$/m, file);
    assert.match(out, /^\[result\] success · \$0\.0066 ·/m, file);
    assert.doesNotMatch(out, /\{"type"/, file);
  }
  const error = render(fixture('claude-2.1.330/stream-json.auth401.stdout'));
  assert.match(error, /^\[result\] error/m);
  assert.match(error, /401|API key|authenticat/i);
});

test('every real capture of the three CLIs renders without a line of raw JSON', () => {
  let files = 0;
  for (const cli of readdirSync(REAL))
    for (const file of readdirSync(join(REAL, cli)).filter((f) => f.endsWith('.stdout'))) {
      const out = render(fixture(join(cli, file)), 120, 4096);
      assert.doesNotMatch(out, /^(\{|\[\{)/m, `${cli}/${file}:\n${out}`);
      files++;
    }
  assert.ok(files > 100, `${files} captures`);
});

test('claude tool calls: one line each, cut to the width; tool results one line; prompts not shown', () => {
  const long = 'x'.repeat(300);
  const events = [
    { type: 'user', message: { role: 'user', content: 'the prompt itself' } },
    {
      type: 'assistant',
      message: {
        content: [
          { type: 'text', text: 'Reading.\nThen testing.' },
          { type: 'tool_use', name: 'Read', input: { file_path: '/ws/PLAN.md' } },
          { type: 'tool_use', name: 'Bash', input: { command: `npm test ${long}` } },
        ],
      },
    },
    { type: 'user', message: { content: [{ type: 'tool_result', content: 'line one\nline two' }] } },
  ];
  const out = render(events.map((e) => JSON.stringify(e)).join('\n'), 60);
  assert.deepEqual(out.split('\n').slice(0, 5), [
    'Reading.',
    'Then testing.',
    '→ Read /ws/PLAN.md',
    `→ Bash npm test ${'x'.repeat(42)}…`,
    '  ← line one line two',
  ]);
  assert.doesNotMatch(out, /the prompt itself/);
});

test('codex --json: messages, commands and file changes one line each, the turn with its tokens', () => {
  const out = render(readFileSync(join(REAL, '../codex-exec-success.jsonl'), 'utf8'));
  assert.match(out, /^\[thinking\] \*\*Checking the plan\*\*$/m);
  assert.match(out, /^→ \$ bash -lc 'npm test' \(exit 0\)$/m);
  assert.match(out, /^→ edit src\/login\.ts \(update\)$/m);
  assert.match(out, /^Login endpoint implemented and tested\. <promise>COMPLETE<\/promise>$/m);
  assert.match(out, /^\[result\] turn completed · tokens in 24763, out 122$/m);
  assert.match(render(fixture('codex-0.169.0/json.server500.stdout')), /^\[result\] turn failed: We’re currently/m);
});

test('gemini stream-json (deltas joined into one message) and json', () => {
  const stream = render(fixture('gemini-0.61.0/stream-json.ok.stdout'));
  assert.match(stream, /^\[init\] gemini gemini-2\.5-pro$/m);
  assert.match(stream, /^All steps are finished and checked\. <promise>DONE<\/promise>$/m);
  assert.match(stream, /^\[result\] success · 0\.1 s · tokens in 1400, out 80$/m);
  assert.doesNotMatch(stream, /Do the next step/, 'the prompt (a user message) is not shown');
  const tools = render(readFileSync(join(REAL, '../gemini-stream.jsonl'), 'utf8'));
  assert.match(tools, /^→ read_file PLAN\.md$/m);
  assert.match(tools, /^ {2}← success: - \[ \] add endpoint$/m);
  const doc = render(fixture('gemini-0.61.0/json.ok.stdout'));
  assert.match(doc, /^All steps are finished and checked\. <promise>DONE<\/promise>\n\[result\] done$/m);
  assert.match(
    render(fixture('gemini-0.61.0/stream-json.bad400.stdout')),
    /^\[result\] error · .*\n.*Invalid JSON payload/m,
  );
});

test('plain text and controller notes as they are; escape sequences from the agent shown escaped', () => {
  const text = fixture('codex-0.169.0/text.ok.stdout');
  assert.equal(render(text), text.endsWith('\n') ? text : `${text}\n`);
  const hostile = [
    'plain \u001b]0;title\u0007 text',
    JSON.stringify({ type: 'assistant', message: { content: [{ type: 'text', text: 'red \u001b[31m!' }] } }),
    JSON.stringify({ type: 'assistant', message: { content: [{ type: 'tool_use', name: 'X\u001b[2J', input: {} }] } }),
    '[stderr] \u009b6n',
  ].join('\n');
  const out = render(hostile);
  assert.doesNotMatch(out, RAW_CONTROL, JSON.stringify(out));
  assert.match(out, /plain \\x1b\]0;title\\x07 text/);
  assert.match(out, /red \\x1b\[31m!/);
});

test('a line past LOG_LINE_MAX_BYTES is shown as text, cut, with its size; one at the bound is parsed', () => {
  const event = (text: string) => JSON.stringify({ type: 'assistant', message: { content: [{ type: 'text', text }] } });
  const over = event('é'.repeat(LOG_LINE_MAX_BYTES / 2)); // a JSON line, its characters two bytes each
  const fits = event('y'.repeat(LOG_LINE_MAX_BYTES - event('').length));
  assert.equal(Buffer.byteLength(fits), LOG_LINE_MAX_BYTES);
  const out = render(`before\r\n${over}\n${fits}\nafter`, 100, 64 * 1024 + 3).split('\n');
  const size = Buffer.byteLength(over).toLocaleString('en-US');
  assert.equal(out[0], 'before');
  assert.match(out[1] ?? '', new RegExp(`^\\{"type":"assistant".*é… ${size} bytes, cut$`));
  assert.ok((out[1]?.length ?? 0) <= 4000, `${out[1]?.length} characters`);
  assert.match(out[2] ?? '', /^y{3998}…$/, 'parsed: the message, not its JSON');
  assert.deepEqual(out.slice(3), ['after', '']);
});

test('episodic logs NAME DIR: a header per episode, rendered; --raw is the bytes; --dir still works', async () => {
  const dir = specDir([
    {
      name: 'alpha',
      script: {
        steps: [
          { mode: 'continue', text: 'first step done \u001b[2J' },
          { mode: 'success', costUSD: 0.5 },
        ],
      },
    },
  ]);
  const run = await runCli(['run', dir]);
  assert.equal(run.code, 0, run.stderr);
  const first = await runCli(['logs', 'alpha', dir, '--episode', '1']);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /^=== default\/alpha episode 1: continue, exit 0, \$0\.0123, finished \S+Z ===$/m);
  assert.match(first.stdout, /^first step done \\x1b\[2J$/m);
  assert.match(first.stdout, /^\[result\] success · \$0\.0123/m);
  assert.match(first.stdout, /^--- episodic: agent exited 0 ---$/m);
  assert.doesNotMatch(first.stdout, /\{"type"|\u001b/);
  const raw = await runCli(['logs', 'alpha', dir, '--episode', '1', '--raw']);
  assert.equal(raw.stdout, readFileSync(join(dir, '.episodic/logs/default/alpha/episode-1.log'), 'utf8'));
  const viaOption = await runCli(['logs', 'alpha', '--dir', dir]);
  assert.match(viaOption.stdout, /^=== default\/alpha episode 2: succeeded, exit 0, \$0\.5000/m);
  const followed = await runCli(['logs', 'alpha', dir, '--episode', '1', '-f'], { timeoutMs: 10_000 });
  assert.equal(followed.code, 0);
  assert.match(followed.stdout, /episode 1:[\s\S]*first step done[\s\S]*episode 2:[\s\S]*COMPLETE/);
  const clash = await runCli(['logs', 'alpha', dir, '--dir', join(dir, 'ws')]);
  assert.equal(clash.code, 2);
  assert.match(clash.stderr, /two directories given/);
});

test('plain get shows why each task is where it is, cut to the terminal width; -o wide uncut', async () => {
  const message = `no way forward: ${'because '.repeat(15)}\u001b[31mend`;
  const dir = specDir([
    {
      name: 'stuck',
      script: { default: { mode: 'fail', text: message } },
      spec: { limits: { maxConsecutiveFailures: 1 } },
    },
  ]);
  const run = await runCli(['run', dir]);
  assert.equal(run.code, 1, run.stderr);
  const get = await runCli(['get', dir], { env: { COLUMNS: '120' } });
  const [header, row] = get.stdout.trimEnd().split('\n');
  assert.match(header, /PROGRESS\s+PARENT\s+MESSAGE$/);
  assert.match(row, /stuck\s+Skipped\s+1\s+\S+\s+ConsecutiveFailures\s+\S.*…$/);
  assert.ok(row.length <= 119, `${row.length}: ${row}`);
  const wide = await runCli(['get', dir, '-o', 'wide'], { env: { COLUMNS: '120' } });
  assert.match(wide.stdout, /because end$/m);
  assert.doesNotMatch(get.stdout + wide.stdout, RAW_CONTROL);
});
