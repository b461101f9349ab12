// The documented invocation, `node_modules/.bin/episodic`, in a fresh clone of HEAD, started by the system's
// old Node (/usr/bin/node, v20): the launcher re-executes itself under the project's node_modules/.bin/node and
// passes arguments, output, signals and the exit code through. Real git, real npm (its `prepare`), real Nodes.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isAlive, readStatus, REPO } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const OLD_NODE = '/usr/bin/node';
/** Only the system's directories: `env node` in the launcher's shebang finds the old Node. */
const SYSTEM_ENV = { ...process.env, PATH: '/usr/bin:/bin' };
const dirs: string[] = [];
const leftovers: Array<() => void> = [];

function temp(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/**
 * A clone of HEAD whose node_modules is its own directory (so `prepare` may write into it) holding links to
 * the checkout's packages: what `npm ci` installs, without downloading it again.
 */
function freshClone(): string {
  const clone = path.join(temp('episodic-clone-'), 'episodic');
  const head = execFileSync('git', ['-C', REPO, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  execFileSync('git', ['clone', '--quiet', '--no-checkout', REPO, clone]);
  execFileSync('git', ['-C', clone, 'checkout', '--quiet', '--detach', head]);
  const modules = realpathSync(path.join(REPO, 'node_modules'));
  mkdirSync(path.join(clone, 'node_modules', '.bin'), { recursive: true });
  for (const entry of readdirSync(modules).filter((e) => e !== '.bin'))
    symlinkSync(path.join(modules, entry), path.join(clone, 'node_modules', entry));
  for (const bin of readdirSync(path.join(modules, '.bin')).filter((b) => b !== 'episodic'))
    symlinkSync(realpathSync(path.join(modules, '.bin', bin)), path.join(clone, 'node_modules', '.bin', bin));
  // The system npm, as `npm ci` would run it after installing: prepare builds dist/ and links the bin.
  execFileSync('npm', ['run', 'prepare', '--silent'], { cwd: clone, env: SYSTEM_ENV, stdio: 'pipe' });
  return clone;
}

function specDir(agentScript: string): string {
  const dir = temp('episodic-old-node-');
  const task = {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentTask',
    metadata: { name: 'tiny' },
    spec: {
      prompt: 'x',
      agent: { command: ['sh', '-c', agentScript], output: 'text' },
      workspace: 'ws/tiny',
      completion: { promise: 'DONE' },
    },
  };
  writeFileSync(path.join(dir, 'tiny.yaml'), JSON.stringify(task));
  return dir;
}

function runIn(clone: string, args: string[]): { code: number | null; stdout: string; stderr: string } {
  try {
    const stdout = execFileSync('node_modules/.bin/episodic', args, { cwd: clone, env: SYSTEM_ENV, stdio: 'pipe' });
    return { code: 0, stdout: stdout.toString(), stderr: '' };
  } catch (err) {
    const e = err as { status: number | null; stdout: Buffer; stderr: Buffer };
    return { code: e.status, stdout: e.stdout.toString(), stderr: e.stderr.toString() };
  }
}

/** The launcher's child processes (Linux /proc). */
function childrenOf(pid: number): number[] {
  const text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  return text ? text.split(' ').map(Number) : [];
}

describe('a fresh clone, started by the system Node 20: node_modules/.bin/episodic', () => {
  let clone: string;
  before(() => {
    const major = Number(execFileSync(OLD_NODE, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }));
    assert.ok(major < 22, `${OLD_NODE} is Node ${major}: this test needs a Node older than 22 there`);
    clone = freshClone();
  });
  after(() => {
    for (const kill of leftovers) {
      try {
        kill();
      } catch {
        // gone already
      }
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('exists after prepare, and is the checkout bin', () => {
    assert.equal(readlinkSync(path.join(clone, 'node_modules/.bin/episodic')), '../../bin/episodic.js');
  });

  it('--version, a tiny run, and the exit code of a usage error', () => {
    const version = runIn(clone, ['--version']);
    assert.equal(version.code, 0, version.stderr);
    assert.match(version.stdout, /^\d+\.\d+\.\d+/);
    const dir = specDir('echo "<promise>DONE</promise>"');
    const run = runIn(clone, ['run', dir]);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.equal(readStatus(dir, 'tiny')?.status.phase, 'Succeeded');
    const get = runIn(clone, ['get', dir]);
    assert.match(get.stdout, /tiny\s+Succeeded/);
    assert.equal(runIn(clone, ['validate', path.join(dir, 'missing')]).code, 2);
    // init's next command is the invocation it was started with, so it works as printed.
    const init = runIn(clone, ['init', path.join(dir, 'new'), '--agent', 'claude']);
    assert.match(init.stdout, /next:\n {2}node_modules\/\.bin\/episodic run \S+\/new\n/, init.stderr);
  });

  it('runs the CLI under the project Node, and a SIGTERM to the launcher alone stops it gracefully (exit 130)', async () => {
    const dir = specDir('sleep 600');
    const launcher = spawn('node_modules/.bin/episodic', ['run', dir, '--log-format', 'json'], {
      cwd: clone,
      env: SYSTEM_ENV,
    });
    leftovers.push(() => launcher.kill('SIGKILL'));
    let output = '';
    launcher.stdout.on('data', (d: Buffer) => (output += d.toString()));
    launcher.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => launcher.on('exit', (code) => resolve(code)));
    const agentPid = await waitFor('the agent to start', () => Number(/"agentPid":(\d+)/.exec(output)?.[1]), 30_000);
    leftovers.push(() => process.kill(-agentPid, 'SIGKILL'));
    const [cli] = childrenOf(launcher.pid as number);
    assert.equal(realpathSync(`/proc/${cli}/exe`), realpathSync(path.join(clone, 'node_modules/.bin/node')));
    launcher.kill('SIGTERM');
    assert.equal(await exited, 130, output);
    assert.ok(!isAlive(agentPid), 'the agent was stopped');
    assert.equal(readStatus(dir, 'tiny')?.status.reason, 'ControllerStopped');
  });

  it('the launcher killed outright: its orphaned CLI stops on its own and kills its agent', async () => {
    const dir = specDir('sleep 600');
    const launcher = spawn('node_modules/.bin/episodic', ['run', dir, '--log-format', 'json'], {
      cwd: clone,
      env: SYSTEM_ENV,
    });
    let output = '';
    launcher.stdout.on('data', (d: Buffer) => (output += d.toString()));
    launcher.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const agentPid = await waitFor('the agent to start', () => Number(/"agentPid":(\d+)/.exec(output)?.[1]), 30_000);
    leftovers.push(() => process.kill(-agentPid, 'SIGKILL'));
    const [cli] = childrenOf(launcher.pid as number);
    leftovers.push(() => process.kill(cli, 'SIGKILL'));
    launcher.kill('SIGKILL');
    await waitFor('the CLI to exit', () => !isAlive(cli), 20_000);
    assert.ok(!isAlive(agentPid), 'the agent was stopped');
    assert.equal(readStatus(dir, 'tiny')?.status.reason, 'ControllerStopped');
  });

  it('without a project Node: one line saying what to do, exit 2', () => {
    const bare = temp('episodic-bare-');
    mkdirSync(path.join(bare, 'bin'));
    copyFileSync(path.join(clone, 'bin/episodic.js'), path.join(bare, 'bin/episodic.js'));
    writeFileSync(path.join(bare, 'package.json'), '{"type":"module"}');
    try {
      execFileSync(OLD_NODE, [path.join(bare, 'bin/episodic.js'), '--version'], { stdio: 'pipe' });
      assert.fail('it ran');
    } catch (err) {
      const e = err as { status: number; stderr: Buffer };
      assert.equal(e.status, 2);
      assert.match(e.stderr.toString(), /needs Node\.js 22 or newer; this is v20[^\n]*run `npm ci`/);
    }
  });
});
