// Mailbox arrivals wake their task through the file watch, not the reconciler's resync: the loop runs on a
// ManualClock that never advances, so the resync timer (and every other requeue timer) cannot fire, and a
// message is still acted upon — wake: onMessage starts the next episode, interrupt cancels the running one.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { ManualClock } from '../../controller/core/clock.ts';
import { LocalController } from '../../controller/local/local-controller.ts';
import { MAILBOX_RESYNC_MS } from '../../controller/reconciler/spawn-decide.ts';
import { LocalMailboxes } from '../../controller/sinks/local/mailboxes.ts';
import { loadSpecDir } from '../../controller/sources/local/spec-files.ts';
import {
  interruptWorker,
  readStatus,
  recordedPrompts,
  recordingClaude,
  runCli,
  specDir,
  tempDir,
} from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

async function startFrozen(dir: string): Promise<{ controller: LocalController; clock: ManualClock }> {
  const clock = new ManualClock(new Date());
  const stateDir = join(dir, '.episodic');
  const controller = new LocalController({ dir, stateDir, maxConcurrent: 2, logger: pino({ level: 'silent' }), clock });
  const specs = await loadSpecDir(dir);
  await controller.recover(specs);
  controller.setSpecs(specs);
  return { controller, clock };
}

/** The resync is armed and virtual time has not moved: only an event can have woken the task. */
function assertResyncArmedNotFired(clock: ManualClock, startedAt: number): void {
  assert.ok(clock.pending().includes(MAILBOX_RESYNC_MS), `resync armed: ${clock.pending().join(', ')}`);
  assert.equal(clock.now().getTime(), startedAt, 'virtual time stood still');
}

test('wake: onMessage — episodic send (a new mailbox, then an existing one) starts the next episode at once', async () => {
  const dir = tempDir();
  const record = join(dir, 'runs.jsonl');
  const episodes = { '1': { mode: 'continue' }, '2': { mode: 'continue' }, '3': { mode: 'success' } };
  specDir(
    [
      {
        name: 'bob',
        script: { episodes },
        spec: {
          prompt: 'Inbox:\n{{messages}}',
          wake: 'onMessage',
          agent: recordingClaude(record),
          limits: { maxEpisodes: 3, episodeTimeoutSeconds: 30 },
        },
      },
    ],
    { dir },
  );
  const { controller, clock } = await startFrozen(dir);
  const t0 = clock.now().getTime();
  try {
    for (const [round, text] of [
      [1, 'first'],
      [2, 'second'],
    ] as const) {
      await waitFor(`bob awaiting message ${round}`, () => {
        const s = readStatus(dir, 'bob')?.status;
        return s?.reason === 'AwaitingMessage' && s.episodes === round && !s.currentEpisode;
      });
      assertResyncArmedNotFired(clock, t0);
      const sent = await runCli(['send', 'bob', text, dir, '--from', 'alice']);
      assert.equal(sent.code, 0, sent.stderr);
      await waitFor(`episode ${round + 1} with the message`, () => recordedPrompts(record).length === round + 1);
      assert.match(recordedPrompts(record)[round] ?? '', new RegExp(`Inbox:\\nfrom alice at \\S+:\\n${text}`));
    }
    await waitFor('bob succeeded', () => readStatus(dir, 'bob')?.status.phase === 'Succeeded');
    assert.equal(clock.now().getTime(), t0);
  } finally {
    await controller.shutdown();
  }
});

test('interrupt — a message sent into the mailbox cancels the running episode at once', async () => {
  const dir = tempDir();
  const record = join(dir, 'runs.jsonl');
  specDir([interruptWorker(record)], { dir });
  const { controller, clock } = await startFrozen(dir);
  const t0 = clock.now().getTime();
  try {
    await waitFor(
      'episode 1 running',
      () => readStatus(dir, 'worker')?.status.currentEpisode?.number === 1 && recordedPrompts(record).length === 1,
    );
    assertResyncArmedNotFired(clock, t0);
    const message = { id: 'lead.1.0', from: 'lead', at: new Date().toISOString(), text: 'stop, the spec changed' };
    assert.deepEqual(await new LocalMailboxes(join(dir, '.episodic')).send('default', 'worker', message), {
      result: 'sent',
    });
    const records = join(dir, '.episodic', 'logs', 'default', 'worker', 'episodes.jsonl');
    const lines = () => (existsSync(records) ? readFileSync(records, 'utf8').trim().split('\n') : []);
    // The status and the episode's record are two writes: wait for both, not for the first one seen.
    await waitFor(
      'worker succeeded, both episodes on record',
      () => readStatus(dir, 'worker')?.status.phase === 'Succeeded' && lines().length >= 2,
    );
    const outcomes = lines().map((l) => (JSON.parse(l) as { outcome: string }).outcome);
    assert.deepEqual(outcomes, ['cancelled', 'succeeded']);
    assert.match(recordedPrompts(record)[1] ?? '', /News:\nfrom lead at \S+:\nstop, the spec changed/);
    assert.equal(clock.now().getTime(), t0, 'virtual time stood still');
  } finally {
    await controller.shutdown();
  }
});
