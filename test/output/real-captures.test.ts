// Every capture of the real CLIs (test/fixtures/agent-outputs/real/, made by test/real-agents/capture.ts
// against the stand-in model server) → the analysis the reconciler sees: the class the README promises, the
// reset time, tokens and cost as the CLI reported them, and a human sentence as the message. Every rule of
// every CLI table must decide at least one capture.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { TABLES } from '../../controller/executors/output/classify.ts';
import { nextMidnight } from '../../controller/executors/output/zoned-time.ts';
import { createOutputAnalyzer } from '../../controller/executors/output/index.ts';
import type { OutputAnalysis, OutputSetting, ProcessExit } from '../../controller/executors/output/types.ts';
import { AGENT_CLIS } from '../../scripts/agent-clis/clis.ts';
import { FORMATS } from '../real-agents/agents.ts';
import { scenariosOf } from '../real-agents/cases.ts';
import { expectedClass, resetWindow } from '../real-agents/expectations.ts';

const ROOT = new URL('../fixtures/agent-outputs/real/', import.meta.url);
type Cli = 'claude' | 'codex' | 'gemini';

interface Capture {
  cli: Cli;
  format: string;
  scenario: string;
  exit: ProcessExit;
  analysis: OutputAnalysis;
  capturedAt: Date;
  TZ: string;
  stdout: Buffer;
  stderr: Buffer;
}

/** The capture through an analyzer set up as `output: <format>` for the agent command `command`. */
function analyse(c: Omit<Capture, 'analysis'>, format: OutputSetting, command?: string[]): OutputAnalysis {
  const analyzer = createOutputAnalyzer({
    format,
    command,
    promise: 'DONE',
    now: () => c.capturedAt,
    timeZone: c.TZ,
  });
  analyzer.write(c.stdout, 'stdout');
  analyzer.write(c.stderr, 'stderr');
  return analyzer.finish(c.exit);
}

function load(): Capture[] {
  const captures: Capture[] = [];
  for (const dir of readdirSync(ROOT)) {
    const cli = dir.split('-')[0] as Cli;
    const meta = JSON.parse(readFileSync(new URL(`${dir}/capture.json`, ROOT), 'utf8')) as {
      capturedAt: string;
      TZ: string;
    };
    for (const file of readdirSync(new URL(`${dir}/`, ROOT)).filter((f) => f.endsWith('.exit'))) {
      const base = `${dir}/${file.slice(0, -'.exit'.length)}`;
      const [format, ...rest] = file.slice(0, -'.exit'.length).split('.');
      const exitText = readFileSync(new URL(`${base}.exit`, ROOT), 'utf8').trim();
      const exit: ProcessExit = exitText.startsWith('signal')
        ? { exitCode: null, signal: exitText.split(' ')[1] }
        : { exitCode: Number(exitText) };
      const raw = {
        cli,
        format: format as string,
        scenario: rest.join('.'),
        exit,
        capturedAt: new Date(meta.capturedAt),
        TZ: meta.TZ,
        stdout: readFileSync(new URL(`${base}.stdout`, ROOT)),
        stderr: readFileSync(new URL(`${base}.stderr`, ROOT)),
      };
      captures.push({ ...raw, analysis: analyse(raw, cli) });
    }
  }
  return captures;
}

const captures = load();

test('there are captures of every CLI in every format', () => {
  const seen = new Set(captures.map((c) => `${c.cli} ${c.format}`));
  for (const key of [
    'claude text',
    'claude json',
    'claude stream-json',
    'codex text',
    'codex json',
    'gemini text',
    'gemini json',
    'gemini stream-json',
  ]) {
    assert.ok(seen.has(key), key);
  }
  assert.ok(captures.length >= 150, `only ${captures.length} captures`);
});

// The real-agent suites run one scenario per distinct behaviour (cases.ts liveScenarios): every other scenario
// in every format is proven here, so the pinned version of each CLI must have them all.
test('every scenario in every format of each pinned CLI version is captured', () => {
  for (const { name, version } of AGENT_CLIS) {
    const have = new Set(captures.filter((c) => c.cli === name).map((c) => `${c.format}.${c.scenario}`));
    const dir = readdirSync(ROOT).find((d) => d === `${name}-${version}`);
    assert.ok(dir, `no captures of ${name} ${version}: run node test/real-agents/capture.ts ${name}`);
    for (const format of FORMATS[name])
      for (const scenario of scenariosOf(name))
        assert.ok(have.has(`${format}.${scenario}`), `${name} ${format}.${scenario}`);
  }
});

for (const c of captures) {
  test(`${c.cli} ${c.format} ${c.scenario}`, () => {
    const a = c.analysis;
    const want = expectedClass(c.cli, c.scenario);
    assert.equal(a.errorClass, want.errorClass, `rule ${a.rule}: ${a.message}`);
    if (want.reset === 'none') assert.equal(a.resetAt, undefined);
    if (want.reset === 'pacificMidnight')
      assert.equal(a.resetAt, nextMidnight(c.capturedAt, 'America/Los_Angeles')?.toISOString());
    if (want.reset && typeof want.reset === 'object') {
      // The server set the reset from its own clock during the capture: within minutes after capturedAt.
      const [lo, hi] = resetWindow(want.reset, c.capturedAt.getTime(), c.capturedAt.getTime() + 10 * 60_000);
      const at = Date.parse(a.resetAt ?? '');
      assert.ok(at >= lo && at <= hi, `resetAt ${a.resetAt} vs captured ${c.capturedAt.toISOString()}`);
    }
    assert.equal(a.completion, want.completion);
    if (a.errorClass !== 'none') {
      // The CLI's sentence: never a stack frame, a dumped object or an empty line.
      assert.ok(a.message && a.message.length > 10, `message: ${a.message}`);
      assert.doesNotMatch(a.message, /\bat .+\.js:\d+|\[object Object\]|^\s*[{}]|^\s*"?\w+"?:\s/);
    }
  });
}

test('tokens and cost as each CLI reported them', () => {
  const ok = (cli: Cli, format: string) =>
    captures.find((c) => c.cli === cli && c.format === format && c.scenario === 'ok')!.analysis;
  for (const format of ['json', 'stream-json']) {
    assert.deepEqual(ok('claude', format).tokens, { input: 1234, output: 56, cacheRead: 200, cacheWrite: 100 });
    assert.equal(ok('claude', format).costUSD, 0.006596000000000001);
    // Thoughts (20) are output: the json form reports them, stream-json only in total_tokens.
    assert.deepEqual(ok('gemini', format).tokens, { input: 1000, output: 100, cacheRead: 400, cacheWrite: 0 });
  }
  // Codex: input_tokens 1500 includes 300 cached and 50 cache-written.
  assert.deepEqual(ok('codex', 'json').tokens, { input: 1150, output: 70, cacheRead: 300, cacheWrite: 50 });
});

test('messages are the sentences the CLIs printed', () => {
  const msg = (cli: Cli, format: string, scenario: string) =>
    captures.find((c) => c.cli === cli && c.format === format && c.scenario === scenario)?.analysis.message ?? '';
  for (const format of ['text', 'json', 'stream-json'])
    assert.match(msg('claude', format, 'overloaded'), /^API Error: 529 Overloaded\./);
  for (const format of ['text', 'json'])
    assert.equal(
      msg('codex', format, 'server500'),
      'We’re currently experiencing high demand, which may cause temporary errors.',
    );
  for (const format of ['text', 'json', 'stream-json']) {
    assert.equal(msg('gemini', format, 'usage'), 'You have exhausted your daily quota on this model.');
    assert.match(
      msg('gemini', format, 'setup-noauthtype'),
      /^Invalid auth method selected\. \(set security\.auth\.selectedType/,
    );
  }
});

test('every rule of every CLI table is decided by at least one real capture', () => {
  const decided = new Set(captures.map((c) => c.analysis.rule));
  for (const cli of ['claude', 'codex', 'gemini'] as const) {
    for (const rule of TABLES[cli].rules) assert.ok(decided.has(rule.id), `${rule.id} has no capture`);
  }
});

// Issue 18 item 3: plain `claude -p` with `output: text` took "API Error: Request rejected (429) · …" for an
// ordinary failure. Every text-mode capture, set up as the README allows, must be judged as the CLI's own
// table judges it: `text` or `auto` with the CLI's command uses that table (same rule, reset and message),
// and without it (a wrapper script) the generic rules give the same class. `auto` is checked on the JSON
// captures too: a CLI that fails before its first JSON line (gemini's set-up errors) prints plain text.
const verdict = (a: OutputAnalysis) => ({
  errorClass: a.errorClass,
  rule: a.rule,
  resetAt: a.resetAt,
  message: a.message,
});
const textCaptures = captures.filter((c) => c.format === 'text');

test('captures as output text (text mode) or auto, with the CLI as the command, get its own verdict', () => {
  assert.ok(textCaptures.length >= 60, `only ${textCaptures.length} text captures`);
  for (const c of captures) {
    const own = verdict(c.analysis);
    for (const format of c.format === 'text' ? (['text', 'auto'] as const) : (['auto'] as const)) {
      for (const command of [[c.cli, '-p'], [`/home/u/.local/bin/${c.cli}`]]) {
        const a = analyse(c, format, command);
        assert.deepEqual(verdict(a), own, `${c.cli} ${c.scenario} as ${format} ${command[0]}`);
        assert.equal(a.completion, c.analysis.completion, `${c.cli} ${c.scenario} as ${format}`);
      }
    }
  }
});

test('captures as output text (text mode) or auto, with any other command, get the class the CLI rules give', () => {
  for (const c of captures) {
    for (const format of c.format === 'text' ? (['text', 'auto'] as const) : (['auto'] as const)) {
      const a = analyse(c, format, ['/opt/agent/run.sh']);
      const want = c.analysis;
      assert.equal(a.errorClass, want.errorClass, `${c.cli} ${c.scenario} as ${format}: ${a.rule} ${a.message}`);
      assert.equal(a.completion, want.completion, `${c.cli} ${c.scenario} as ${format}`);
      // A reset the CLI's rules find, the generic ones find too (the same instant).
      assert.equal(a.resetAt, want.resetAt, `${c.cli} ${c.scenario} as ${format}`);
    }
  }
});

test('plain claude -p, output text: "API Error: Request rejected (429) · …" is transient, not a failure of the work', () => {
  const usage = textCaptures.find((c) => c.cli === 'claude' && c.scenario === 'usage');
  assert.match(usage?.stdout.toString() ?? '', /^API Error: Request rejected \(429\) · This request would exceed/);
  for (const command of [['claude', '-p'], ['/opt/agent/run.sh']]) {
    assert.equal(analyse(usage as Capture, 'text', command).errorClass, 'transient', command[0]);
  }
});
