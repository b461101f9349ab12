// The stand-in agents through the real executor and output analyzer: each mode yields the EpisodeResult a
// real claude/codex run in that situation would, and scripts select modes per episode or per run.
import { strict as assert } from 'node:assert';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { EpisodeResult } from '../../controller/api/episode-result.ts';
import { startProcessEpisode } from '../../controller/executors/process/process-episode.ts';
import type { ProcessEpisodeRequest } from '../../controller/executors/process/episode-request.ts';
import { FAKE_CLAUDE, FAKE_CODEX, request, sandbox } from './support.ts';
import type { Sandbox } from './support.ts';

let box: Sandbox;
beforeEach(() => {
  box = sandbox();
});
afterEach(() => box.cleanup());

const NOW = new Date('2026-03-02T10:00:00Z');

async function run(overrides: Partial<ProcessEpisodeRequest>): Promise<EpisodeResult> {
  return (
    await startProcessEpisode(
      request(box, { analyzer: { format: 'auto', promise: 'COMPLETE', now: () => NOW }, ...overrides }),
    )
  ).result;
}
const claude = (mode: string, env: Record<string, string> = {}) => run({ env: { FAKE_AGENT_MODE: mode, ...env } });
const codexArgv = [process.execPath, FAKE_CODEX, 'exec', '--json'];
const codex = (mode: string, extra: Partial<ProcessEpisodeRequest> = {}) =>
  run({ argv: codexArgv, promptVia: 'argument', env: { FAKE_AGENT_MODE: mode }, ...extra });

describe('fake-claude modes', () => {
  test('success: promise, cost and tokens', async () => {
    const r = await claude('success');
    assert.deepEqual([r.exitCode, r.format, r.completion, r.errorClass], [0, 'claude', 'promise', 'none']);
    assert.equal(r.costUSD, 0.0123);
    assert.equal(r.tokens.output, 56);
  });

  test('the promise value and the cost are configurable', async () => {
    const env = { FAKE_AGENT_MODE: 'success', FAKE_AGENT_PROMISE: 'SHIPPED', FAKE_AGENT_COST_USD: '0.5' };
    assert.equal((await run({ env })).completion, undefined, 'the analyzer looks for COMPLETE');
    const shipped = await run({ env, analyzer: { format: 'claude', promise: 'SHIPPED' } });
    assert.equal(shipped.completion, 'promise');
    assert.equal(shipped.costUSD, 0.5);
  });

  test('continue: exit 0, no completion', async () => {
    const r = await claude('continue');
    assert.deepEqual([r.exitCode, r.completion, r.errorClass, r.agentError], [0, undefined, 'none', false]);
  });

  test('fail: exit 1, a plain failure', async () => {
    const r = await claude('fail');
    assert.deepEqual([r.exitCode, r.errorClass], [1, 'none']);
    assert.match(r.message ?? '', /crashed/);
  });

  test('max-turns: agent error, not retryable', async () => {
    const r = await claude('max-turns');
    assert.equal(r.agentError, true);
    assert.equal(r.errorClass, 'none');
  });

  test('transient: 529 overloaded', async () => {
    const r = await claude('transient');
    assert.deepEqual([r.exitCode, r.agentError, r.errorClass], [1, true, 'transient']);
  });

  test('auth: 401 is fatal', async () => {
    const r = await claude('auth');
    assert.deepEqual([r.agentError, r.errorClass], [true, 'fatal']);
  });

  test('usage-limit: plain text with a reset time', async () => {
    const r = await claude('usage-limit');
    assert.equal(r.errorClass, 'usageLimit');
    assert.equal(r.resetAt, '2026-03-02T14:00:00.000Z', '3pm Europe/Berlin');
  });

  test('malformed output: no crash, exit 0, no completion', async () => {
    const r = await claude('malformed');
    assert.equal(r.exitCode, 0);
    assert.equal(r.completion, undefined);
  });

  test('--output-format json prints one result object', async () => {
    const r = await run({ argv: [process.execPath, FAKE_CLAUDE, '-p', '--output-format', 'json'] });
    assert.equal(r.format, 'claude');
    assert.equal(r.completion, 'promise');
  });
});

describe('fake-codex modes', () => {
  test('success: promise and tokens; cost only from pricing', async () => {
    const r = await codex('success');
    assert.deepEqual([r.format, r.completion, r.costUSD], ['codex', 'promise', 0]);
    // codex's input_tokens include the cached ones; the analyzer reports them apart
    assert.deepEqual([r.tokens.input, r.tokens.cacheRead], [24763 - 24448, 24448]);
    const priced = await codex('success', {
      analyzer: { format: 'auto', promise: 'COMPLETE', pricing: { inputPerMTok: 1, outputPerMTok: 10 } },
    });
    assert.ok(priced.costUSD > 0);
  });

  test('fail: 429 turn.failed is transient', async () => {
    const r = await codex('fail');
    assert.deepEqual([r.exitCode, r.agentError, r.errorClass], [1, true, 'transient']);
  });

  test('usage-limit: usageLimit with a reset time', async () => {
    const r = await codex('usage-limit');
    assert.equal(r.errorClass, 'usageLimit');
    assert.equal(r.resetAt, '2026-03-02T12:05:00.000Z');
  });
});

describe('scripts', () => {
  test('episodes: the plan is keyed by EPISODIC_EPISODE', async () => {
    writeFileSync(
      join(box.ws, '.fake-agent.json'),
      JSON.stringify({ episodes: { 1: { mode: 'transient' }, 2: { mode: 'success' } } }),
    );
    assert.equal((await run({ episode: 1 })).errorClass, 'transient');
    assert.equal((await run({ episode: 2 })).completion, 'promise');
  });

  test('succeedAfter counts runs in a workspace file', async () => {
    writeFileSync(join(box.ws, '.fake-agent.json'), JSON.stringify({ succeedAfter: 3 }));
    const results = [];
    for (let i = 0; i < 4; i++) results.push((await run({})).completion);
    assert.deepEqual(results, [undefined, undefined, 'promise', 'promise']);
  });

  test('steps run in order and the last one repeats; the env overrides the script', async () => {
    writeFileSync(
      join(box.ws, 'plan.json'),
      JSON.stringify({ steps: [{ mode: 'auth' }, { mode: 'continue', text: 'step two' }] }),
    );
    const env = { FAKE_AGENT_SCRIPT: 'plan.json' };
    assert.equal((await run({ env })).errorClass, 'fatal');
    assert.match((await run({ env })).message ?? '', /step two/);
    assert.match((await run({ env })).message ?? '', /step two/);
    assert.equal((await run({ env: { ...env, FAKE_AGENT_MODE: 'success' } })).completion, 'promise');
  });
});
