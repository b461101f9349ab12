// Real Codex under the in-pod runner `episodic episode --` (see runner-suite.ts), and the time zone of the
// reset times it prints without one.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startModelServer, type ModelServer } from '../model-server/server.ts';
import { makeCase } from './cases.ts';
import { defineRunnerSuite, runCase } from './runner-suite.ts';
import { ensureClis, scratchDir, skipRealAgents } from './support.ts';

defineRunnerSuite('codex', 3);

describe('codex: "try again at 7:13 AM" is read in completion.resetTimeZone', { skip: skipRealAgents }, () => {
  let server: ModelServer;
  let scratch: ReturnType<typeof scratchDir>;
  before(async () => {
    await ensureClis();
    server = await startModelServer();
    scratch = scratchDir('codex-tz');
  });
  after(async () => {
    await server?.close();
    scratch?.remove();
  });

  it('an agent in Tokyo under a runner in UTC: right with the spec zone, 9 hours off without it', async () => {
    const run = async (name: string, completion: Record<string, unknown>) => {
      const c = { ...makeCase('codex', 'json', 'usage'), name };
      for (const d of ['ws', 'tmp']) mkdirSync(path.join(scratch.dir, name, d), { recursive: true });
      // The agent alone runs in Tokyo, as with `agent.env: [{name: TZ, value: Asia/Tokyo}]` locally.
      return runCase({
        c,
        serverUrl: server.url,
        root: scratch.dir,
        completion,
        wrap: ['/usr/bin/env', 'TZ=Asia/Tokyo'],
        runnerTz: 'UTC',
      });
    };
    const from = Date.now();
    const [withZone, without] = await Promise.all([
      run('with-zone', { resetTimeZone: 'Asia/Tokyo' }),
      run('without', {}),
    ]);
    const to = Date.now();
    assert.equal(withZone.result?.errorClass, 'usageLimit', withZone.result?.message);
    // The server's reset is two hours on; codex prints it to the minute.
    const at = Date.parse(withZone.result?.resetAt ?? '');
    assert.ok(at >= from + 2 * 3_600_000 - 61_000 && at <= to + 2 * 3_600_000, withZone.result?.resetAt);
    // Read as UTC, Tokyo's 7:13 is 9 hours early: already past, so it rolls to the next day.
    assert.notEqual(without.result?.resetAt, withZone.result?.resetAt);
    assert.ok(Date.parse(without.result?.resetAt ?? '') > at + 3_600_000, without.result?.resetAt);
  });
});
