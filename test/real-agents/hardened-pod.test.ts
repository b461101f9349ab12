// Issue 30 §3: which agent CLIs run under the hardened episode pod's constraints, checked locally the same way:
// a non-root uid (65532, as the pods run), a read-only root, and only the workspace, /tmp and $HOME writable.
// bubblewrap makes that filesystem; setpriv drops to the uid (root's real uid gone, no capabilities). The real
// claude, codex and gemini CLIs each answer a prompt from the stand-in model server that way. A probe under
// the same wrapper first shows the constraints hold (so the test can fail).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chownSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startModelServer, type ModelServer } from '../model-server/server.ts';
import { tempDir } from '../support/local.ts';
import { CLI_HANG_GUARD_MS, hangGuardMessage, SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import { agentRun } from './agents.ts';
import { CLIS, ensureClis, skipRealAgents } from './support.ts';

const UID = 65532;
const CLI_CACHE = path.join(process.env.HOME ?? '/root', '.cache', 'episodic', 'agent-clis');
// Where the CLIs appear inside: the cache is under root's 0700 home, which uid 65532 may not enter (as in an image).
const CLI_DIR = '/opt/agent-clis';
const skip = skipRealAgents || (process.getuid?.() !== 0 ? 'needs root to drop to uid 65532' : false);

function chownTree(dir: string): void {
  chownSync(dir, UID, UID);
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) chownTree(file);
    else chownSync(file, UID, UID);
  }
}

// The pod's paths: the workspace and $HOME are volumes there, bound here from the test's directories.
const WORKSPACE = '/mnt/workspace'; // /workspace would need a mount point in the read-only root
const HOME = '/home/episodic';

/** argv under the pod's constraints: read-only root, writable workspace, /tmp and $HOME, uid 65532. */
function hardened(argv: string[], dirs: { workspace: string; home: string }, env: Record<string, string>): string[] {
  const out = ['bwrap', '--ro-bind', '/', '/', '--tmpfs', '/opt', '--ro-bind', CLI_CACHE, CLI_DIR];
  out.push('--tmpfs', '/home', '--bind', dirs.home, HOME, '--tmpfs', '/mnt', '--bind', dirs.workspace, WORKSPACE);
  for (const dir of ['/opt', '/home', '/mnt']) out.push('--remount-ro', dir);
  out.push('--perms', '1777', '--tmpfs', '/tmp', '--dev', '/dev', '--proc', '/proc');
  out.push('--unshare-pid', '--die-with-parent', '--chdir', WORKSPACE, '--clearenv');
  const inside = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v.replaceAll(dirs.home, HOME)]));
  const PATH = `${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`;
  for (const [k, v] of Object.entries({ ...inside, HOME, PATH, TMPDIR: '/tmp' })) out.push('--setenv', k, v);
  out.push('--', 'setpriv', `--reuid=${UID}`, `--regid=${UID}`, '--clear-groups', '--inh-caps=-all', '--', ...argv);
  return out;
}

function run(argv: string[], stdin?: string): Promise<{ code: number | null; out: string }> {
  return new Promise((done) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.stdin.end(stdin ?? '');
    // Each CLI's turn is bounded by the model server's replies: only a hang reaches the guard, and it says so.
    let hung = false;
    const guard = setTimeout(() => {
      hung = true;
      child.kill('SIGKILL');
    }, CLI_HANG_GUARD_MS);
    child.on('close', (code) => {
      clearTimeout(guard);
      done({ code, out: hung ? `${out}\n${hangGuardMessage(argv.join(' '), CLI_HANG_GUARD_MS)}` : out });
    });
  });
}

describe('real agent CLIs under the hardened pod constraints', { skip, timeout: SUITE_HANG_GUARD_MS }, () => {
  let server: ModelServer;
  const root = tempDir('episodic-hardened-');
  before(async () => {
    await ensureClis();
    server = await startModelServer();
  });
  after(() => server?.close());
  const dirsFor = (name: string) => {
    const dirs = { workspace: path.join(root, name, 'workspace'), home: path.join(root, name, 'home') };
    for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
    chownTree(path.join(root, name));
    return dirs;
  };

  it('the constraints hold: uid 65532, the root read-only, the three writable places writable', async () => {
    const dirs = dirsFor('probe');
    const script =
      'id -u; touch /usr/x 2>/dev/null || echo ro-usr; touch /etc/x 2>/dev/null || echo ro-etc; ' +
      'touch /x 2>/dev/null || echo ro-root; touch /opt/x 2>/dev/null || echo ro-opt; ' +
      'touch "$PWD/w" /tmp/w "$HOME/w" && echo writable';
    const r = await run(hardened(['sh', '-c', script], dirs, {}));
    assert.equal(r.out, `${UID}\nro-usr\nro-etc\nro-root\nro-opt\nwritable\n`);
  });

  for (const cli of CLIS)
    it(`${cli}: answers a prompt from the model server`, async () => {
      const scenario = `ok.${cli}-hardened`;
      const dirs = dirsFor(cli);
      const a = agentRun(cli, cli === 'gemini' ? 'text' : 'json', {
        serverUrl: server.url,
        scenarioName: scenario,
        home: dirs.home,
      });
      chownTree(dirs.home); // the CLI's settings, written by the harness
      const command = a.command.map((arg) => arg.replace(CLI_CACHE, CLI_DIR));
      const prompt = 'Do the next step of the plan.';
      const argv = a.promptVia === 'argument' ? [...command, prompt] : command;
      const r = await run(hardened(argv, dirs, a.env), a.promptVia === 'stdin' ? prompt : undefined);
      assert.equal(r.code, 0, r.out.slice(-2000));
      assert.ok(server.requestsFor(scenario).length > 0, `${cli} reached the model server`);
    });
});
