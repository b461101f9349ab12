// `episodic get` shows a stack task's context stack: the STACK column (depth) in the table, and under
// `episodic get NAME` the top frames from status.stack — at most three, each cut to 200 characters, agent
// text escaped (a pushed frame is untrusted), the rest counted.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { NODE, REPO, readStatus, runCli, specDir } from '../support/local.ts';

const OPS_AGENT = join(REPO, 'test/agents/ops-agent.mjs');

test('get NAME: STACK depth, the top three frames (cut, escaped), the rest counted; get: the column', async () => {
  const pushed = ['stuck here\n@exit 1', 'evil \u001b]0;pwned\u0007 frame', `long ${'x'.repeat(300)}`];
  const first = `decompose\n@op ${JSON.stringify({ op: 'push', frames: pushed })}`;
  const dir = specDir([
    {
      name: 'deep',
      spec: {
        prompt: undefined,
        stack: [first, 'bottom one', 'bottom two'],
        agent: { command: [NODE, OPS_AGENT], output: 'text' },
        limits: { maxEpisodes: 2, episodeTimeoutSeconds: 30 },
        backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 },
      },
    },
    { name: 'plain', spec: { limits: { maxEpisodes: 1, episodeTimeoutSeconds: 30 } } },
  ]);
  await runCli(['run', dir]);
  // Episode 1 pushed three frames over the two below it; episode 2 failed on the top one, which stays.
  assert.equal(readStatus(dir, 'deep')?.status.stack?.depth, 5);

  const one = await runCli(['get', 'deep', dir]);
  assert.equal(one.code, 0, one.stderr);
  const [table, stack] = one.stdout.split('\n\n');
  const [header, row] = (table ?? '').split('\n');
  const at = header?.indexOf('STACK') ?? -1;
  assert.ok(at > 0, header);
  assert.equal(row?.slice(at).split(/\s+/)[0], '5');
  const lines = (stack ?? '').trimEnd().split('\n');
  assert.equal(lines[0], 'Stack: depth 5 (top first; the first runs next)');
  assert.deepEqual(lines.slice(1, 4), ['  1. stuck here', '     @exit 1', '  2. evil \\x1b]0;pwned\\x07 frame']);
  assert.match(lines[4] ?? '', /^ {2}3\. long x{190,199}…$/);
  assert.equal(lines[5], '  … 2 more frames (-o yaml: status.stack.frames)');
  assert.equal(lines.length, 6);
  assert.ok(!one.stdout.includes('\u001b'), 'no raw escape reaches the terminal');

  // The table: the stack task's depth, nothing for a task without a stack.
  const all = await runCli(['get', dir]);
  const [allHeader, ...rows] = all.stdout.trimEnd().split('\n');
  const col = allHeader?.indexOf('STACK') ?? -1;
  assert.deepEqual(
    rows.map((r) => [r.split(/\s+/)[1], r.slice(col).split(/\s+/)[0]]),
    [
      ['deep', '5'],
      ['plain', ''],
    ],
  );
});
