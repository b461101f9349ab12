// The launcher (bin/episodic.js) under `npx episodic run`: npm runs it under `sh -c` and forwards signals
// only to that sh, so without help the controller outlives whatever stopped npm, agents and all. Real npm,
// real sh, the built CLI (dist/), an agent that would run for minutes.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { isAlive, readStatus, REPO } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const dirs: string[] = [];
/** What a failed test could leave running: npm's process group (npm, sh, controller) and the agent. */
const leftovers: Array<() => void> = [];

function specDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'episodic-npx-'));
  dirs.push(dir);
  const task = {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentTask',
    metadata: { name: 'slow' },
    spec: {
      prompt: 'x',
      agent: { command: [process.execPath, '-e', 'setTimeout(() => {}, 600000)'], output: 'text' },
      workspace: 'ws/slow',
    },
  };
  writeFileSync(path.join(dir, 'slow.yaml'), JSON.stringify(task));
  return dir;
}

interface Started {
  npm: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  hasExited: () => boolean;
  agentPid: number;
  output: () => string;
}

/** `npx episodic ARGS` in its own process group (like a script's background job), once its agent runs. */
async function npxRun(dir: string): Promise<Started> {
  const env = { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH}` };
  const npm = spawn('npx', ['--no-install', 'episodic', 'run', dir, '--log-format', 'json'], {
    cwd: REPO,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  npm.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  npm.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  let done = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    npm.on('exit', (code, signal) => {
      done = true;
      resolve({ code, signal });
    }),
  );
  leftovers.push(() => {
    try {
      process.kill(-npm.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  });
  const agentPid = await waitFor(
    'the agent to start',
    () => Number(/"agentPid":(\d+)/.exec(output)?.[1]) || undefined,
    30_000,
  );
  leftovers.push(() => {
    try {
      process.kill(-agentPid, 'SIGKILL');
    } catch {
      // gone
    }
  });
  return { npm, exited, hasExited: () => done, agentPid, output: () => output };
}

function stoppedGracefully(dir: string, s: Started): void {
  const status = readStatus(dir, 'slow')?.status;
  assert.equal(status?.reason, 'ControllerStopped', s.output());
  assert.equal(status?.lastEpisode?.outcome, 'cancelled');
  assert.match(s.output(), /stopping: no new episodes; terminating running ones/);
}

describe('npx episodic run: the launcher stops with what stopped npm', {
  skip: !existsSync(path.join(REPO, 'dist/cli/main.js')) && 'dist/ not built',
}, () => {
  after(() => {
    for (const kill of leftovers) kill();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('SIGTERM to npm alone (it reaches only the sh npm runs us under, which dies of it): stops, agent killed, npm exits', async () => {
    const dir = specDir();
    const s = await npxRun(dir);
    s.npm.kill('SIGTERM');
    await waitFor('npx to exit', () => s.hasExited(), 20_000);
    await waitFor('the agent to be killed', () => !isAlive(s.agentPid), 10_000);
    await waitFor(
      'the status to be written',
      () => readStatus(dir, 'slow')?.status.reason === 'ControllerStopped',
      10_000,
    );
    stoppedGracefully(dir, s);
  });

  it('npm killed (timeout -k, a CI runner giving up): the orphaned controller stops and kills its agent', async () => {
    const dir = specDir();
    const s = await npxRun(dir);
    s.npm.kill('SIGKILL');
    await waitFor('the agent to be killed', () => !isAlive(s.agentPid), 20_000);
    await waitFor(
      'the status to be written',
      () => readStatus(dir, 'slow')?.status.reason === 'ControllerStopped',
      10_000,
    );
    stoppedGracefully(dir, s);
  });

  it('Ctrl-C in a terminal (SIGINT to the whole group): one graceful stop, and npm ends as interrupted', async () => {
    const dir = specDir();
    const s = await npxRun(dir);
    process.kill(-s.npm.pid!, 'SIGINT');
    // npm passes a signal it got on by dying of it once its child is done (or exits 130).
    const { code, signal } = await s.exited;
    assert.ok(signal === 'SIGINT' || code === 130, `${code} ${signal}`);
    assert.equal(s.output().match(/stopping: no new episodes/g)?.length, 1);
    await waitFor('the agent to be killed', () => !isAlive(s.agentPid), 10_000);
    stoppedGracefully(dir, s);
  });
});
