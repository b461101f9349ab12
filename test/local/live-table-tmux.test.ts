// `episodic run --watch` on a real terminal (tmux, fixed size): the live table is redrawn in place, so the
// scrollback holds one copy of it however long it runs, and it shows what a person watches — the running
// episode's time, checklist progress, episodes against the cap with retries apart, the total cost.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CLI, NODE, readStatus, specDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const SOCKET = `episodic-test-${process.pid}`;
const tmux = (...args: string[]) =>
  execFileSync('tmux', ['-L', SOCKET, '-f', '/dev/null', ...args], { encoding: 'utf8' });
/** Everything the pane ever showed: its scrollback and the screen. */
const scrollback = () => tmux('capture-pane', '-p', '-J', '-S', '-', '-t', 'live');
const headers = (text: string) => text.split('\n').filter((l) => /^TASK\s+PHASE\s+EPISODE/.test(l)).length;

after(() => {
  try {
    tmux('kill-server');
  } catch {
    // already gone
  }
});

test('run --watch in tmux: one table in the scrollback after many redraws, with RUNNING, PROGRESS, RETRIES, total', async () => {
  // Episode 1 an outage (a retry), 2 ticks one of two checklist items, 3 runs on while we watch.
  const dir = specDir([
    {
      name: 'watched',
      spec: { limits: { maxEpisodes: 3, episodeTimeoutSeconds: 600 }, progress: { checklist: 'PLAN.md' } },
      script: {
        episodes: {
          '1': { mode: 'transient' },
          '2': { mode: 'continue', costUSD: 0.25, writeFiles: { 'PLAN.md': '- [x] one\n- [ ] two\n' } },
          '3': { mode: 'sleep', children: false, sleepSeconds: 600 },
        },
      },
    },
  ]);
  mkdirSync(join(dir, 'ws/watched'), { recursive: true });
  writeFileSync(join(dir, 'ws/watched/PLAN.md'), '- [ ] one\n- [ ] two\n');
  tmux('new-session', '-d', '-s', 'live', '-x', '150', '-y', '20', NODE, CLI, 'run', '--watch', dir);
  tmux('set-option', '-t', 'live', 'remain-on-exit', 'on');
  // Six seconds into episode 3: a dozen redraws since it started.
  const screen = await waitFor(
    'episode 3 running for 6 s',
    () => {
      const text = scrollback();
      return /watched\s+Running\s+2\/3\s+1\s+([6-9]|\d\d)s\s+1\/2\s/.test(text) && text;
    },
    60_000,
  );
  assert.equal(headers(screen), 1, screen);
  assert.match(screen, /TASK\s+PHASE\s+EPISODE\s+RETRIES\s+RUNNING\s+PROGRESS\s+COST/);
  const cost = readStatus(dir, 'watched')?.status.costUSD ?? 0;
  assert.ok(cost >= 0.25, `cost on record: ${cost}`);
  assert.ok(screen.includes(`1 task, 1 running, total cost $${cost.toFixed(4)}`), screen);
  tmux('send-keys', '-t', 'live', 'C-c');
  const final = await waitFor(
    'the run to stop',
    () => /watched\s+Pending.*ControllerStopped/.test(scrollback()) && scrollback(),
    30_000,
  );
  assert.equal(headers(final), 1, final);
});
