// Local mode end to end: the real CLI, real processes, stand-in agents speaking real output formats.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  FAKE_CLAUDE,
  FAKE_CODEX,
  NODE,
  assertAllDead,
  readStatus,
  runCli,
  specDir,
  taskYaml,
  tempDir,
} from '../support/local.ts';

test('transient twice, then success: retries 2, no failures counted', async () => {
  const dir = specDir([
    { name: 'flaky', script: { steps: [{ mode: 'transient' }, { mode: 'transient' }, { mode: 'success' }] } },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const s = readStatus(dir, 'flaky')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.equal(s?.episodes, 3);
  assert.equal(s?.retries, 2);
  assert.equal(s?.consecutiveFailures, 0);
  assert.equal(s?.lastEpisode?.outcome, 'succeeded');
});

test('three consecutive failures → Skipped (ConsecutiveFailures), exit 1', async () => {
  const dir = specDir([{ name: 'broken', script: { default: { mode: 'fail' } } }]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1);
  const s = readStatus(dir, 'broken')?.status;
  assert.equal(s?.phase, 'Skipped');
  assert.equal(s?.reason, 'ConsecutiveFailures');
  assert.equal(s?.episodes, 3);
  assert.equal(s?.consecutiveFailures, 3);
});

test('exit 0 without a signal continues; progress resets the failure count', async () => {
  const steps = [
    { mode: 'fail' },
    { mode: 'fail' },
    { mode: 'continue' },
    { mode: 'fail' },
    { mode: 'fail' },
    { mode: 'success' },
  ];
  const dir = specDir([{ name: 'bumpy', script: { steps } }]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const s = readStatus(dir, 'bumpy')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.equal(s?.episodes, 6);
});

test('cost cap: NeedsReview (BudgetExceeded) once spend reaches maxCostUSD, and no further episode', async () => {
  const dir = specDir([
    {
      name: 'pricey',
      spec: { limits: { maxEpisodes: 10, episodeTimeoutSeconds: 30, maxCostUSD: 1 } },
      script: { default: { mode: 'continue', costUSD: 0.4 } },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1);
  const s = readStatus(dir, 'pricey')?.status;
  assert.equal(s?.phase, 'NeedsReview');
  assert.equal(s?.reason, 'BudgetExceeded');
  assert.equal(s?.episodes, 3, '0.4 + 0.4 + 0.4 ≥ 1 after the third episode');
  assert.ok(Math.abs((s?.costUSD ?? 0) - 1.2) < 1e-9);
});

test('--budget-usd caps all tasks together (GlobalBudgetExceeded)', async () => {
  const dir = specDir([
    { name: 'a', script: { default: { mode: 'continue', costUSD: 0.3 } } },
    { name: 'b', script: { default: { mode: 'continue', costUSD: 0.3 } } },
  ]);
  const res = await runCli(['run', dir, '--budget-usd', '1', '--max-concurrent', '1']);
  assert.equal(res.code, 1);
  const a = readStatus(dir, 'a')?.status;
  const b = readStatus(dir, 'b')?.status;
  assert.equal(a?.reason, 'GlobalBudgetExceeded');
  assert.equal(b?.reason, 'GlobalBudgetExceeded');
  const total = (a?.costUSD ?? 0) + (b?.costUSD ?? 0);
  assert.ok(total >= 1 && total < 1.3, `spent ${total}: stops at the first start after the budget is reached`);
});

test('maxEpisodes without completion → NeedsReview (MaxEpisodesReached)', async () => {
  const dir = specDir([
    {
      name: 'endless',
      spec: { limits: { maxEpisodes: 3, episodeTimeoutSeconds: 30 } },
      script: { default: { mode: 'continue' } },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1);
  const s = readStatus(dir, 'endless')?.status;
  assert.equal(s?.reason, 'MaxEpisodesReached');
  assert.equal(s?.episodes, 3);
});

test('verify gate: a promise is only success when verify exits 0', async () => {
  const dir = specDir([
    {
      name: 'gated',
      // verify passes only once the marker file exists: episode 1 claims done too early, episode 2 writes it.
      spec: {
        completion: {
          promise: 'COMPLETE',
          verify: [NODE, '-e', "process.exit(require('fs').existsSync('done.txt') ? 0 : 1)"],
        },
      },
      script: { steps: [{ mode: 'success' }, { mode: 'success', writeFiles: { 'done.txt': 'ok' } }] },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const s = readStatus(dir, 'gated')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.equal(s?.episodes, 2);
  const log = readFileSync(join(dir, '.episodic/logs/default/gated/episode-1.log'), 'utf8');
  assert.match(log, /COMPLETE/);
});

test('usage limit: waits until the parsed reset time, then resumes; not a failure', async () => {
  const resetAt = Math.floor(Date.now() / 1000) + 3;
  const dir = specDir([
    {
      name: 'limited',
      script: {
        steps: [{ mode: 'usage-limit', text: `Claude AI usage limit reached|${resetAt}` }, { mode: 'success' }],
      },
    },
  ]);
  const started = Date.now();
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const s = readStatus(dir, 'limited')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.equal(s?.retries, 1);
  assert.equal(s?.consecutiveFailures, 0);
  assert.ok(
    Date.now() >= resetAt * 1000 - 1000,
    `resumed at ${new Date().toISOString()} (started ${new Date(started).toISOString()})`,
  );
});

test('fatal (401) → Failed (FatalError) at once', async () => {
  const dir = specDir([{ name: 'nokey', script: { default: { mode: 'auth' } } }]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1);
  const s = readStatus(dir, 'nokey')?.status;
  assert.equal(s?.phase, 'Failed');
  assert.equal(s?.reason, 'FatalError');
  assert.equal(s?.episodes, 1);
});

test('agent command not found → Failed (FatalError)', async () => {
  const dir = specDir([{ name: 'missing', spec: { agent: { command: ['definitely-not-an-agent-xyz'] } } }]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1);
  const s = readStatus(dir, 'missing')?.status;
  assert.equal(s?.reason, 'FatalError');
  assert.match(s?.message ?? '', /definitely-not-an-agent-xyz|not found|ENOENT/i);
});

test('timeout kills the whole tree, grandchildren included, and counts as a failure', async () => {
  const dir = tempDir();
  const pidFile = join(dir, 'pids.txt');
  specDir(
    [
      {
        name: 'slow',
        // 5 s, not 1: the agent must start and record its tree before the timeout, and a loaded machine needs >1 s.
        spec: { limits: { maxEpisodes: 1, episodeTimeoutSeconds: 5, maxConsecutiveFailures: 1 } },
        script: { default: { mode: 'sleep', sleepSeconds: 120, pidFile } },
      },
    ],
    { dir },
  );
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1);
  const s = readStatus(dir, 'slow')?.status;
  assert.equal(s?.lastEpisode?.outcome, 'timeout');
  assert.equal(s?.phase, 'Skipped');
  const pids = readFileSync(pidFile, 'utf8').split(/\s+/).filter(Boolean).map(Number);
  assert.ok(pids.length >= 2, `agent and its descendants recorded: ${pids.join(',')}`);
  await assertAllDead(pids, 'tree after timeout');
});

test('dependsOn waits for success; a failed dependency skips its dependents (DependencyFailed)', async () => {
  const dir = specDir([
    { name: 'base', script: { default: { mode: 'success' } } },
    { name: 'after-base', spec: { dependsOn: ['base'] }, script: { default: { mode: 'success' } } },
    {
      name: 'broken',
      spec: { limits: { maxEpisodes: 5, episodeTimeoutSeconds: 30, maxConsecutiveFailures: 1 } },
      script: { default: { mode: 'fail' } },
    },
    { name: 'after-broken', spec: { dependsOn: ['broken'] }, script: { default: { mode: 'success' } } },
    { name: 'cycle-a', spec: { dependsOn: ['cycle-b'] } },
    { name: 'cycle-b', spec: { dependsOn: ['cycle-a'] } },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1);
  assert.equal(readStatus(dir, 'after-base')?.status.phase, 'Succeeded');
  const skipped = readStatus(dir, 'after-broken')?.status;
  assert.equal(skipped?.phase, 'Skipped');
  assert.equal(skipped?.reason, 'DependencyFailed');
  assert.equal(skipped?.episodes, 0, 'a dependent never runs before its dependency succeeds');
  assert.equal(readStatus(dir, 'cycle-a')?.status.reason, 'InvalidSpec');
  assert.match(readStatus(dir, 'cycle-a')?.status.message ?? '', /cycle/);
});

test('malformed agent output degrades to text and never crashes the controller', async () => {
  const dir = specDir([
    {
      name: 'garbled',
      spec: { agent: { command: [NODE, join(import.meta.dirname, '../agents/fake-claude.mjs')], output: 'auto' } },
      script: { steps: [{ mode: 'malformed' }, { mode: 'success' }] },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(readStatus(dir, 'garbled')?.status.episodes, 2);
});

test('codex output: tokens summed, cost from pricing, promise in agent_message', async () => {
  const dir = specDir([
    {
      name: 'codexy',
      spec: {
        agent: { command: [NODE, FAKE_CODEX], output: 'codex', pricing: { inputPerMTok: 1, outputPerMTok: 10 } },
      },
      script: { default: { mode: 'success' } },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const s = readStatus(dir, 'codexy')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.ok((s?.tokens.output ?? 0) > 0, 'tokens recorded');
  assert.ok((s?.costUSD ?? 0) > 0, 'cost computed from pricing');
});

test('a spec with errors is reported with file and field; the other tasks carry on', async () => {
  const dir = specDir([{ name: 'good', script: { default: { mode: 'success' } } }]);
  writeFileSync(
    join(dir, 'bad.yaml'),
    taskYaml({ name: 'bad', spec: { agent: { promptVia: 'carrier-pigeon' } } }).replace('"command"', '"commandz"'),
  );
  writeFileSync(join(dir, 'broken.yaml'), 'apiVersion: episodic.dev/v1alpha1\nkind: AgentTask\nmetadata: {name: x\n');
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1, 'not everything succeeded');
  assert.equal(readStatus(dir, 'good')?.status.phase, 'Succeeded');
  const bad = readStatus(dir, 'bad')?.status;
  assert.equal(bad?.phase, 'Failed');
  assert.equal(bad?.reason, 'InvalidSpec');
  assert.match(bad?.message ?? '', /spec\.agent\.command/);
  assert.match(res.stderr, /bad\.yaml.*spec\.agent\.promptVia/);
  assert.match(res.stderr, /broken\.yaml/);
  assert.ok(existsSync(join(dir, 'bad.yaml')), 'spec files are never modified or removed');
});

test('a workspace outside the spec directory is refused', async () => {
  const dir = specDir([{ name: 'escape', spec: { workspace: '../../etc' } }]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1);
  const s = readStatus(dir, 'escape')?.status;
  assert.equal(s?.phase, 'Failed');
  assert.match(s?.message ?? '', /outside the spec directory/);
});

test('each episode gets its own rendered prompt, on stdin or in EPISODIC_PROMPT_FILE, never a leftover of the last', async () => {
  // Episode 2's prompt is longer than episode 3's: a reused prompt file must not keep the tail of the old one.
  const steps = [
    { mode: 'continue', text: 'a much longer message from the first episode' },
    { mode: 'continue', text: 'short' },
    { mode: 'success' },
  ];
  for (const promptVia of ['stdin', 'file']) {
    const record = join(tempDir(), 'record.jsonl');
    const dir = specDir([
      {
        name: 'p',
        spec: {
          prompt: 'Episode {{episode}}: {{lastEpisode.message}}',
          agent: { command: [NODE, FAKE_CLAUDE], output: 'claude', promptVia },
        },
        script: { steps, record },
      },
    ]);
    const res = await runCli(['run', dir]);
    assert.equal(res.code, 0, res.stderr);
    const runs = readFileSync(record, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const given = runs.map((r) => (promptVia === 'stdin' ? r.stdin : r.promptFileContent));
    assert.deepEqual(given, ['Episode 1: ', `Episode 2: ${steps[0].text}`, `Episode 3: ${steps[1].text}`], promptVia);
  }
});

test('an agent reporting a cost of 1e308 cannot corrupt status: it is not spend, and the status stays valid', async () => {
  const dir = specDir([
    {
      name: 'liar',
      script: {
        steps: [
          { mode: 'continue', costUSD: 1e308 },
          { mode: 'success', costUSD: 1e308 },
        ],
      },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const s = readStatus(dir, 'liar')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.equal(s?.costUSD, 0);
  const get = await runCli(['get', dir, '-o', 'json']);
  assert.match(get.stdout, /"phase": "Succeeded"/);
});

test('an over-long message (a 1,500-character workspace quoted in an error) is cut where it is made; the run goes on', async () => {
  const dir = specDir([
    { name: 'long', spec: { workspace: `../${'x'.repeat(1500)}` } },
    { name: 'good', script: { default: { mode: 'success' } } },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1);
  assert.doesNotMatch(res.stderr + res.stdout, /ZodError|unhandled/i);
  const long = readStatus(dir, 'long')?.status;
  assert.equal(long?.phase, 'Failed');
  assert.ok((long?.lastEpisode?.message ?? '').length <= 1000);
  assert.ok((long?.message ?? '').length <= 2000);
  assert.equal(readStatus(dir, 'good')?.status.phase, 'Succeeded');
});
