// `episodic run --watch` on a real terminal (tmux, fixed size): the live table is redrawn in place, so the
// scrollback holds one copy of it however long it runs, and it shows what a person watches — the running
// episode's time, checklist progress, episodes against the cap with retries apart, the total cost.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { cliEntry } from '../support/cli-entry.ts';
import { FAKE_CLAUDE, NODE, REPO, readStatus, specDir, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const SOCKET = `episodic-test-${process.pid}`;
const tmux = (...args: string[]) =>
  execFileSync('tmux', ['-L', SOCKET, '-f', '/dev/null', ...args], { encoding: 'utf8' });
/** Everything the pane ever showed: its scrollback and the screen. */
const scrollback = (session = 'live') => tmux('capture-pane', '-p', '-J', '-S', '-', '-t', session);
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
  tmux('new-session', '-d', '-s', 'live', '-x', '150', '-y', '20', NODE, cliEntry(), 'run', '--watch', dir);
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

const trigger = (name: string, source: object) =>
  JSON.stringify({
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentTrigger',
    metadata: { name },
    spec: { source, template: { spec: { prompt: 'p', agent: { command: [NODE, FAKE_CLAUDE] } } } },
  });

test('run --watch --hooks-addr in tmux: the triggers under the tasks (next tick, last result) and the hook URL', async () => {
  const dir = specDir([
    { name: 'idle', script: { episodes: { '1': { mode: 'sleep', children: false, sleepSeconds: 600 } } } },
  ]);
  writeFileSync(join(dir, 'yearly.yaml'), trigger('yearly', { schedule: { cron: '0 3 1 1 *' } }));
  writeFileSync(join(dir, 'pushes.yaml'), trigger('pushes', { webhook: { forge: 'gitea', secretEnv: 'HOOK_SECRET' } }));
  const args = ['run', '--watch', dir, '--hooks-addr', '127.0.0.1:0'];
  tmux('new-session', '-d', '-s', 'hooks', '-x', '160', '-y', '24', NODE, cliEntry(), ...args);
  tmux('set-option', '-t', 'hooks', 'remain-on-exit', 'on');
  const screen = await waitFor(
    'the triggers and the hook URL on screen',
    () => {
      const text = scrollback('hooks');
      return (
        /^yearly\s+schedule 0 3 1 1 \*\s+in \d+d\d\dh\s+\d+s ago: 0 items seen, 0 tasks created/m.test(text) && text
      );
    },
    60_000,
  );
  assert.match(screen, /^TRIGGER\s+SOURCE\s+NEXT\s+LAST$/m);
  assert.match(screen, /^pushes\s+webhook\s+on delivery\s+\d+s ago: 0 items seen, 0 tasks created$/m);
  assert.match(screen, /^hooks: POST http:\/\/127\.0\.0\.1:\d+\/hooks\/default\/pushes$/m);
  assert.doesNotMatch(screen, /hooks\/default\/yearly/, 'a schedule takes no deliveries');
  assert.match(screen, /^idle\s+Running\s/m);
  tmux('send-keys', '-t', 'hooks', 'C-c');
  await waitFor('the run to stop', () => /idle\s+Pending.*ControllerStopped/.test(scrollback('hooks')), 30_000);
});

test('the demo in tmux: one final table, then what to try next (get, logs, console)', async () => {
  const dir = tempDir();
  cpSync(join(REPO, 'examples/demo'), dir, { recursive: true });
  tmux('new-session', '-d', '-s', 'demo', '-x', '150', '-y', '30', '-c', REPO, NODE, cliEntry(), 'run', dir);
  tmux('set-option', '-t', 'demo', 'remain-on-exit', 'on');
  const final = await waitFor(
    'the demo to end',
    () => /^Next:$/m.test(scrollback('demo')) && scrollback('demo'),
    120_000,
  );
  assert.equal(headers(final), 1, final);
  assert.match(final, /^build-parser\s+Succeeded\s/m);
  assert.match(final, /^write-docs\s+Succeeded\s/m);
  const next = final.slice(final.indexOf('Next:')).trimEnd().split('\n');
  assert.deepEqual(
    next.slice(1, 5).map((l) => l.trim().split(/\s{3,}/)[0]),
    [
      `bin/episodic.js get ${dir}`,
      `bin/episodic.js get build-parser ${dir} --episodes`,
      `bin/episodic.js logs build-parser ${dir}`,
      `bin/episodic.js console ${dir}`,
    ],
  );
});
