// Issue 18 item 3, end to end through `episodic run`: a command named `claude` with `output: text` is judged
// by Claude Code's rules. Its first run prints the 429 line plain `claude -p` prints (the real capture
// test/fixtures/agent-outputs/real/claude-2.1.330/text.usage.stdout) and exits 1: a transient error, retried,
// not a failed episode.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { NODE, REPO, readStatus, runCli, specDir } from '../support/local.ts';

const CAPTURE = join(REPO, 'test/fixtures/agent-outputs/real/claude-2.1.330/text.usage.stdout');

/** An executable `claude` (node script): a captured line on its first run, then the sentinel. */
function fakeClaude(binDir: string, capture = CAPTURE): string {
  mkdirSync(binDir, { recursive: true });
  const path = join(binDir, 'claude');
  const script = `#!${NODE}
const fs = require('node:fs');
const runs = '.runs';
const n = fs.existsSync(runs) ? Number(fs.readFileSync(runs, 'utf8')) + 1 : 1;
fs.writeFileSync(runs, String(n));
if (n === 1) { process.stdout.write(fs.readFileSync(${JSON.stringify(capture)})); process.exitCode = 1; }
else process.stdout.write('All tests pass. <promise>DONE</promise>\\n');
`;
  writeFileSync(path, script);
  chmodSync(path, 0o755);
  return path;
}

test('plain claude -p with output text: "API Error: Request rejected (429)" is transient, then the task succeeds', async () => {
  const dir = specDir([]);
  const claude = fakeClaude(join(dir, 'bin'));
  const spec = (name: string) => ({
    name,
    spec: {
      backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 },
      prompt: 'Fix the test. Print <promise>DONE</promise> when it passes.',
      agent: { command: [claude, '-p'], output: name },
      completion: { promise: 'DONE' },
      limits: { maxEpisodes: 5, episodeTimeoutSeconds: 30 },
    },
    script: {},
  });
  specDir([spec('text'), spec('auto')], { dir });
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  for (const name of ['text', 'auto']) {
    assert.equal(readStatus(dir, name)?.status?.phase, 'Succeeded', name);
    const records = readFileSync(join(dir, '.episodic/logs/default', name, 'episodes.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { number: number; outcome: string; message?: string });
    assert.equal(records[0]?.outcome, 'transient', `${name}: ${records[0]?.message}`);
    assert.match(records[0]?.message ?? '', /^API Error: Request rejected \(429\)/, name);
    assert.equal(records.at(-1)?.outcome, 'succeeded', name);
  }
});

test('the command named claude brings Claude Code\'s own rules to plain text: its hint for "Not logged in"', async () => {
  const dir = specDir([]);
  const nokey = join(REPO, 'test/fixtures/agent-outputs/real/claude-2.1.330/text.setup-nokey.stdout');
  const task = (name: string, command: string) => ({
    name,
    spec: {
      prompt: 'Fix the test.',
      agent: { command: [command, '-p'], output: 'text' },
      limits: { maxEpisodes: 2, episodeTimeoutSeconds: 30 },
    },
    script: {},
  });
  const claude = fakeClaude(join(dir, 'bin'), nokey);
  const wrapper = join(dir, 'bin', 'run-agent');
  writeFileSync(wrapper, readFileSync(claude));
  chmodSync(wrapper, 0o755);
  specDir([task('named-claude', claude), task('wrapper', wrapper)], { dir });
  await runCli(['run', dir]);
  const last = (name: string) => readStatus(dir, name)?.status?.lastEpisode;
  assert.equal(last('named-claude')?.outcome, 'fatal');
  assert.match(
    last('named-claude')?.message ?? '',
    /Not logged in · Please run \/login \(give the agent ANTHROPIC_API_KEY/,
  );
  // Any other command: the generic rules, fatal too, without Claude Code's hint.
  assert.equal(last('wrapper')?.outcome, 'fatal');
  assert.doesNotMatch(last('wrapper')?.message ?? '', /ANTHROPIC_API_KEY/);
});
