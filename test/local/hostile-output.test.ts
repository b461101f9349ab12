// Hostile agent output end to end (issue 12): NUL bytes, invalid UTF-8, escape sequences, a cost of 1e308 and
// NaN in Claude's own result format, and a 20 MB line without a newline. The run records every episode with
// bounded, valid status; no absurd number becomes spend; get stays terminal-safe.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readStatus, runCli, specDir, tempDir } from '../support/local.ts';

function agentScript(dir: string, name: string, body: string): string {
  const file = join(dir, `${name}.sh`);
  writeFileSync(file, `#!/usr/bin/env bash\ncat >/dev/null\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

test('hostile output: NUL, invalid UTF-8, absurd costs and a 20 MB line are recorded safely', async () => {
  const bin = tempDir();
  const agents = {
    binary: agentScript(
      bin,
      'binary',
      String.raw`printf 'start\0\0\xff\xfe\x1b]0;pwned\x07 <promise>DONE</promise>\n'; exit 0`,
    ),
    absurd: agentScript(
      bin,
      'absurd',
      String.raw`printf '{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":1e308,"usage":{"input_tokens":1e300,"output_tokens":-5}}\n'`,
    ),
    nan: agentScript(
      bin,
      'nan',
      String.raw`printf '{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":NaN}\n'`,
    ),
    huge: agentScript(bin, 'huge', String.raw`head -c 20000000 /dev/zero | tr '\0' 'a'; exit 1`),
  };
  const tasks = Object.entries(agents).map(([name, path]) => ({
    name,
    spec: {
      agent: { command: [path], output: name === 'binary' || name === 'huge' ? 'text' : 'claude' },
      completion: { promise: 'DONE' },
      limits: { maxEpisodes: 1, maxConsecutiveFailures: 1, episodeTimeoutSeconds: 60 },
    },
  }));
  const dir = specDir(tasks);
  const run = await runCli(['run', dir], { timeoutMs: 120_000 });
  assert.equal(run.code, 1, run.stderr.slice(-2000));
  assert.doesNotMatch(run.stderr, /Unhandled|\n\s+at .+:\d+:\d+\)?\n/);
  const binary = readStatus(dir, 'binary')?.status;
  assert.equal(binary?.phase, 'Succeeded', 'the sentinel after NUL and invalid UTF-8 is still read');
  for (const name of ['absurd', 'nan']) {
    const s = readStatus(dir, name)?.status;
    assert.equal(s?.episodes, 1, name);
    assert.equal(s?.costUSD, 0, `${name}: an absurd or non-numeric cost is not spend`);
    assert.ok(
      Number.isFinite(s?.tokens.input) && (s?.tokens.output ?? -1) >= 0,
      `${name}: ${JSON.stringify(s?.tokens)}`,
    );
  }
  const huge = readStatus(dir, 'huge')?.status;
  assert.equal(huge?.lastEpisode?.outcome, 'failed');
  assert.ok((huge?.lastEpisode?.message ?? '').length <= 1000, 'the message is bounded');
  const get = await runCli(['get', dir, '-o', 'wide']);
  assert.doesNotMatch(get.stdout, /[\u0000-\u0008\u000b-\u001f]/);
});
