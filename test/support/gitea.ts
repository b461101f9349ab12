// A real Gitea forge for tests: `const gitea = await startGitea()` runs Gitea v1.26 (built once per machine by
// scripts/gitea/build.sh, cached in ~/.cache/episodic) on 127.0.0.1 with SQLite in a temp dir, as a non-root
// user (Gitea refuses root), with an admin and an all-scopes token; `await gitea.stop()` ends it and removes
// the dir. Each call is its own instance on its own port, so test files can run several at once.
// The REST wrappers are in gitea-api.ts.
//
// What Gitea 1.26 offers a poller (read in its source, routers/api/v1/repo/issue.go, and checked by
// test/gitea/gitea.test.ts):
// - Issue lists (`GET /repos/{o}/{r}/issues`) send no ETag and no Last-Modified, and ignore If-None-Match /
//   If-Modified-Since: every poll is answered 200 with a full body. There is no 304 to be had.
// - `since=` (RFC 3339) filters on the updated_unix with `>=` at one-second resolution, so a poll
//   with since = the newest updated_at seen returns that item again: dedupe by (number, updated_at). A new
//   comment bumps the updated_at, so `since=` also finds issues that only got a comment. The
//   cheapest "nothing changed" poll is one request with since= (and labels=) returning `[]`.
// - `labels=` takes label names, ANDed; names that do not exist in the repo are dropped silently, and if
//   none is left the filter is off (all issues are returned), so resolve the label first.
// - X-Total-Count and Link headers paginate; `limit` is capped by [api] MAX_RESPONSE_ITEMS (50).
// - Webhooks sign the raw body with HMAC-SHA256 in X-Gitea-Signature (hex, no prefix); the host must be in
//   [webhook] ALLOWED_HOST_LIST, which is "loopback" here.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { GiteaApi } from './gitea-api.ts';
import { repoRoot, run } from './cluster.ts';

const execFileAsync = promisify(execFile);

export * from './gitea-api.ts';

export interface Gitea extends GiteaApi {
  /** e.g. http://127.0.0.1:34567 (no trailing slash) */
  url: string;
  admin: { name: string; token: string };
  adminToken: string;
  /** The instance's temp dir (app.ini, data, repos, gitea.log). */
  dir: string;
  /** Pid of the Gitea server (also its process group id). */
  pid: number;
  /** Milliseconds from spawn until the API answered. */
  startMs: number;
  /** Resident memory of the gitea server process in bytes (VmRSS). */
  rss(): Promise<number>;
  /** The uid the gitea server process runs as. */
  uid(): Promise<number>;
  stop(): Promise<void>;
}

interface Runtime {
  user: string;
  uid: number;
  gid: number;
  home: string;
}

const ADMIN = 'episodic-admin';
const READY_TIMEOUT_MS = Number(process.env.EPISODIC_GITEA_READY_TIMEOUT_MS ?? 120_000);

/** Start a fresh Gitea on its own free port (retried if another process takes the port first). */
export async function startGitea(): Promise<Gitea> {
  const runtime = await prepareRuntime();
  for (let attempt = 1; ; attempt++) {
    try {
      return await startInstance(runtime);
    } catch (err) {
      if (attempt >= 3 || !String(err).includes('address already in use')) throw err;
    }
  }
}

async function prepareRuntime(): Promise<Runtime> {
  const out = await run('bash', [path.join(repoRoot, 'scripts', 'gitea', 'runtime.sh')], { timeout: 600_000 });
  const env = Object.fromEntries(out.split('\n').map((l) => l.split('=', 2) as [string, string]));
  return { user: env.GITEA_USER, uid: Number(env.GITEA_UID), gid: Number(env.GITEA_GID), home: env.GITEA_HOME };
}

async function startInstance(runtime: Runtime): Promise<Gitea> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'episodic-gitea-'));
  let child: ChildProcess | undefined;
  try {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const config = path.join(dir, 'custom', 'conf', 'app.ini');
    await mkdir(path.dirname(config), { recursive: true });
    await writeFile(config, appIni({ dir, port, url, user: runtime.user, home: runtime.home }));
    await chownTree(dir, runtime);
    const started = Date.now();
    child = await spawnGitea(runtime, dir, config);
    await waitReady(url, child, dir);
    const startMs = Date.now() - started;
    const admin = await createAdmin(runtime, dir, config);
    const pid = child.pid ?? 0;
    const stop = stopper(child, dir);
    return Object.assign(new GiteaApi(url, admin.token), {
      url,
      admin,
      adminToken: admin.token,
      dir,
      pid,
      startMs,
      rss: async () => (await procStatus(pid, 'VmRSS')) * 1024,
      uid: () => procStatus(pid, 'Uid'),
      stop,
    });
  } catch (err) {
    if (child) await stopper(child, dir)();
    else await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

function appIni(o: { dir: string; port: number; url: string; user: string; home: string }): string {
  const secret = () => randomBytes(32).toString('base64url');
  return `APP_NAME = episodic-test
RUN_USER = ${o.user}
RUN_MODE = prod
WORK_PATH = ${o.home}

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = ${o.port}
DOMAIN = 127.0.0.1
ROOT_URL = ${o.url}/
; git hooks call back into Gitea here; the default (localhost) may resolve to ::1, where nothing listens
LOCAL_ROOT_URL = ${o.url}/
APP_DATA_PATH = ${o.dir}/data
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false

[database]
DB_TYPE = sqlite3
PATH = ${o.dir}/data/gitea.db
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = ${o.dir}/repos
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = ${secret()}
INTERNAL_TOKEN = ${secret()}
PASSWORD_COMPLEXITY = off

[oauth2]
ENABLED = false

[service]
DISABLE_REGISTRATION = true
ENABLE_NOTIFY_MAIL = false
REGISTER_EMAIL_CONFIRM = false

[mailer]
ENABLED = false

[webhook]
; later trigger tests deliver to listeners on 127.0.0.1
ALLOWED_HOST_LIST = loopback
DELIVER_TIMEOUT = 10

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[queue]
TYPE = channel

[session]
PROVIDER = memory

[actions]
ENABLED = false

[packages]
ENABLED = false

[cron.update_checker]
ENABLED = false

[api]
ENABLE_SWAGGER = false

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = ${o.dir}/log
`;
}

/**
 * How to run the Gitea binary as the runtime user: as root, Node's spawn switches uid/gid itself (no runuser
 * in between, so the child is Gitea and a signal reaches it directly).
 */
function giteaCommand(runtime: Runtime, dir: string, config: string, args: string[]) {
  const file = path.join(runtime.home, 'gitea');
  const argv = ['--config', config, '--work-path', runtime.home, '--custom-path', path.join(dir, 'custom'), ...args];
  // Only what Gitea needs: tokens and settings of the test process must not leak into the forge.
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', HOME: dir, USER: runtime.user };
  const asUser = process.getuid?.() === 0 ? { uid: runtime.uid, gid: runtime.gid } : {};
  return { file, argv, options: { cwd: dir, env, ...asUser } };
}

async function spawnGitea(runtime: Runtime, dir: string, config: string): Promise<ChildProcess> {
  const { file, argv, options } = giteaCommand(runtime, dir, config, ['web']);
  const log = await open(path.join(dir, 'gitea.log'), 'a');
  // detached: its own process group, so stop() also ends the git processes it spawns.
  const child = spawn(file, argv, { ...options, detached: true, stdio: ['ignore', log.fd, log.fd] });
  await log.close();
  return child;
}

async function waitReady(url: string, child: ChildProcess, dir: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `gitea exited (${child.exitCode ?? child.signalCode}) before it answered:\n${await logTail(dir)}`,
      );
    }
    const res = await fetch(`${url}/api/v1/version`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
    if (res?.ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`gitea did not answer on ${url} within ${READY_TIMEOUT_MS} ms:\n${await logTail(dir)}`);
}

async function createAdmin(runtime: Runtime, dir: string, config: string): Promise<{ name: string; token: string }> {
  const args = ['admin', 'user', 'create', '--username', ADMIN, '--email', `${ADMIN}@example.invalid`, '--admin'];
  args.push('--random-password', '--must-change-password=false', '--access-token', '--access-token-scopes', 'all');
  const { file, argv, options } = giteaCommand(runtime, dir, config, args);
  // The output holds the password and token: it is parsed, never echoed.
  const out = await execFileAsync(file, argv, { ...options, timeout: 120_000, encoding: 'utf8' }).then(
    (r) => r.stdout,
    (err: { stderr?: string; message: string }) => {
      throw new Error(`gitea admin user create failed: ${err.stderr?.trim() || err.message}`);
    },
  );
  const token = /Access token was successfully created\.\.\. (\S+)/.exec(out)?.[1];
  if (!token) throw new Error('gitea admin user create printed no access token');
  return { name: ADMIN, token };
}

function stopper(child: ChildProcess, dir: string): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  // A test process that dies without stop() must not leave a forge running.
  const onExit = () => killGroup(child.pid ?? 0, 'SIGKILL');
  process.once('exit', onExit);
  const stop = async () => {
    process.off('exit', onExit);
    if (child.exitCode === null && child.signalCode === null && child.pid) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      killGroup(child.pid, 'SIGTERM');
      const timer = setTimeout(() => killGroup(child.pid ?? 0, 'SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    // Git children may outlive Gitea for a moment; the dir goes only once nothing can write to it.
    killGroup(child.pid ?? 0, 'SIGKILL');
    await groupGone(child.pid ?? 0);
    await rm(dir, { recursive: true, force: true, maxRetries: 5 });
  };
  return () => {
    stopping ??= stop();
    return stopping;
  };
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  if (pid <= 0) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

async function groupGone(pgid: number): Promise<void> {
  for (let i = 0; i < 100 && pgid > 0; i++) {
    try {
      process.kill(-pgid, 0);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A field of /proc/PID/status, e.g. VmRSS (kB) or Uid (real uid first). */
async function procStatus(pid: number, field: string): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const value = new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1];
  if (value === undefined) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(value);
}

async function chownTree(dir: string, runtime: Runtime): Promise<void> {
  if (process.getuid?.() !== 0) return;
  for (const p of [dir, path.join(dir, 'custom'), path.join(dir, 'custom', 'conf')]) {
    await chown(p, runtime.uid, runtime.gid);
  }
  await chown(path.join(dir, 'custom', 'conf', 'app.ini'), runtime.uid, runtime.gid);
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function logTail(dir: string): Promise<string> {
  const text = await readFile(path.join(dir, 'gitea.log'), 'utf8').catch(() => '');
  return text.split('\n').slice(-30).join('\n');
}
