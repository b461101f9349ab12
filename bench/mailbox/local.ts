// Local latency: one `episodic run` (the given tree's CLI) with a wake: onMessage task; each round waits
// until the task awaits a message, lets a random part of a poll period pass (a real sender is not in step
// with the controller's timers), puts a message into the mailbox as `episodic send` does, and measures until
// the agent of the next episode has started.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LocalMailboxes } from '../../controller/sinks/local/mailboxes.ts';
import { NODE } from '../local/lib.ts';

export const AGENT = join(import.meta.dirname, 'agent.mjs');
/** The baseline's poll period: sends are spread over it. */
export const POLL_MS = 2000;

export interface LocalLatencies {
  /** ms from each message being in the mailbox to the next episode's start being on record. */
  recorded: number[];
  /** ms from each message being in the mailbox to the next episode's agent process running. */
  agent: number[];
}

export async function measureLocal(cli: string, rounds: number, keep = false): Promise<LocalLatencies> {
  const dir = mkdtempSync(join(tmpdir(), 'episodic-bench-mailbox-'));
  const starts = join(dir, 'starts.txt');
  mkdirSync(join(dir, 'ws'), { recursive: true });
  const spec = {
    prompt: 'Inbox:\n{{messages}}',
    wake: 'onMessage',
    workspace: 'ws',
    agent: { command: [NODE, AGENT], output: 'text', env: [{ name: 'BENCH_STARTS', value: starts }] },
    limits: { maxEpisodes: rounds + 2, episodeTimeoutSeconds: 60 },
  };
  const manifest = { apiVersion: 'episodic.dev/v1alpha1', kind: 'AgentTask', metadata: { name: 'inbox' }, spec };
  writeFileSync(join(dir, 'inbox.yaml'), JSON.stringify(manifest));
  const child = spawn(NODE, [cli, 'run', dir, '--no-table'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const mailboxes = new LocalMailboxes(join(dir, '.episodic'));
  const sentAt: number[] = [];
  try {
    for (let i = 1; i <= rounds; i++) {
      await until(
        `round ${i}: awaiting a message`,
        () => awaiting(dir, i),
        child,
        () => stderr,
      );
      await sleep(Math.random() * POLL_MS);
      const at = Date.now();
      await mailboxes.send('default', 'inbox', {
        id: `bench.${i}.0`,
        from: 'bench',
        at: new Date(at).toISOString(),
        text: `message ${i}`,
      });
      await until(
        `round ${i}: episode ${i + 1} started`,
        () => startTimes(starts).length > i,
        child,
        () => stderr,
      );
      sentAt.push(at);
    }
    const records = join(dir, '.episodic', 'logs', 'default', 'inbox', 'episodes.jsonl');
    await until(
      'the episode records',
      () => recordedStarts(records).length > rounds,
      child,
      () => stderr,
    );
    const recorded = recordedStarts(records);
    const agent = startTimes(starts);
    return {
      recorded: sentAt.map((at, i) => (recorded[i + 1] as number) - at),
      agent: sentAt.map((at, i) => (agent[i + 1] as number) - at),
    };
  } finally {
    child.kill('SIGINT');
    await exited;
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}

/** Each episode's startedAt as the controller recorded it (before launching its agent), by number - 1. */
function recordedStarts(file: string): number[] {
  if (!existsSync(file)) return [];
  const lines = readFileSync(file, 'utf8').trim().split('\n').filter(Boolean);
  const records = lines.map((l) => JSON.parse(l) as { number: number; startedAt: string });
  return records.sort((a, b) => a.number - b.number).map((r) => Date.parse(r.startedAt));
}

function awaiting(dir: string, episodes: number): boolean {
  const file = join(dir, '.episodic', 'status', 'default', 'inbox.json');
  if (!existsSync(file)) return false;
  try {
    const { status } = JSON.parse(readFileSync(file, 'utf8'));
    return status.reason === 'AwaitingMessage' && status.episodes === episodes && !status.currentEpisode;
  } catch {
    return false; // written as we read
  }
}

function startTimes(file: string): number[] {
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map(Number) : [];
}

export async function until(what: string, probe: () => boolean, child: { exitCode: number | null }, log: () => string) {
  const deadline = Date.now() + 30_000;
  while (!probe()) {
    if (child.exitCode !== null) throw new Error(`the controller exited (${child.exitCode}) before ${what}: ${log()}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${log().slice(-2000)}`);
    await sleep(5);
  }
}
