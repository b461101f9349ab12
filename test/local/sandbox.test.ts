// Issue 30 §4, locally: a hostile stand-in agent (test/agents/hostile-sandbox.mjs) under `episodic run`, sandboxed
// by bubblewrap, tries the controller user's ~/.ssh key, the spec and state directories, another task's workspace,
// the controller's environment through /proc, a write outside its workspace, a loopback port that is not the
// gateway, CONNECT to a listed and a non-listed host:port, and leaving a daemon. Each fails (the gateway and the
// listed host work), the episode is recorded, nothing it read leaks; unsandboxed, the same agent gets the reads.
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NODE, REPO, readStatus, runCli, specDir, tempDir } from '../support/local.ts';

const HOSTILE = join(REPO, 'test/agents/hostile-sandbox.mjs');
const KEY = `ssh-ed25519-KEYCANARY-${process.pid}`;
const OTHER_SECRET = `OTHERCANARY-${process.pid}`;
const ENV_CANARY = `ENVCANARY${process.pid}x`;
const DAEMON_TAG = `4242.${process.pid}`;

type Report = Record<string, { ok: boolean; got?: string; error?: string }>;

function listen(server: Server | ReturnType<typeof createHttpServer>): Promise<number> {
  return new Promise((ready) => server.listen(0, '127.0.0.1', () => ready((server.address() as AddressInfo).port)));
}

/** Every file under dir, as text. */
function allText(dir: string): string {
  if (!existsSync(dir)) return '';
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(join(e.parentPath, e.name), 'latin1'))
    .join('\n');
}

function daemonsAlive(): number {
  return readdirSync('/proc').filter((p) => {
    try {
      return /^\d+$/.test(p) && readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(DAEMON_TAG);
    } catch {
      return false;
    }
  }).length;
}

describe('local sandbox: a hostile agent reaches its workspace and the gateway, nothing else', () => {
  const servers: Array<{ close(): void }> = [];
  let ports: { loopback: number; allowed: number; gateway: number };
  const home = tempDir('episodic-home-');
  before(async () => {
    mkdirSync(join(home, '.ssh'), { recursive: true });
    writeFileSync(join(home, '.ssh', 'id_ed25519'), KEY, { mode: 0o600 });
    const echo = () => createServer((s) => s.on('data', (d) => s.end(`echo ${d}`)));
    const loopback = echo();
    const allowed = echo();
    const gateway = createHttpServer((_req, res) => res.end('gateway pong\n'));
    servers.push(loopback, allowed, gateway);
    ports = { loopback: await listen(loopback), allowed: await listen(allowed), gateway: await listen(gateway) };
  });
  after(() => {
    for (const s of servers) s.close();
  });

  async function runProbe(sandbox: Record<string, unknown> | undefined) {
    const dir = tempDir();
    mkdirSync(join(dir, 'ws', 'other'), { recursive: true });
    writeFileSync(join(dir, 'ws', 'other', 'secret.txt'), OTHER_SECRET);
    const env = {
      HOSTILE_HOST_HOME: home,
      HOSTILE_SPEC_DIR: dir,
      HOSTILE_OTHER_WS: join(dir, 'ws', 'other'),
      HOSTILE_CANARY_REVERSED: [...ENV_CANARY].reverse().join(''),
      HOSTILE_LOOPBACK_PORT: String(ports.loopback),
      HOSTILE_ALLOWED: `127.0.0.1:${ports.allowed}`,
      HOSTILE_DENIED: `127.0.0.1:${ports.loopback}`,
      HOSTILE_DAEMON_TAG: DAEMON_TAG,
      ANTHROPIC_BASE_URL: `http://127.0.0.1:${ports.gateway}`,
    };
    const spec = {
      agent: {
        command: [NODE, HOSTILE, 'probe'],
        output: 'text',
        env: Object.entries(env).map(([name, value]) => ({ name, value })),
      },
      limits: { maxEpisodes: 1, episodeTimeoutSeconds: 60 },
      ...(sandbox ? { sandbox } : {}),
    };
    specDir([{ name: 'probe', spec }], { dir });
    const res = await runCli(['run', dir], {
      timeoutMs: 120_000,
      env: { HOME: home, EPISODIC_TEST_CANARY: ENV_CANARY },
    });
    const report = JSON.parse(readFileSync(join(dir, 'ws', 'probe', 'report.json'), 'utf8')) as Report;
    return { dir, res, report };
  }

  it('sandboxed: every read, write and connection fails but the gateway and the listed host; nothing leaks', async () => {
    const { dir, res, report } = await runProbe({ allowHosts: [`127.0.0.1:${ports.allowed}`] });
    const log = res.stdout + res.stderr;
    assert.equal(res.code, 0, log);
    for (const denied of ['sshKey', 'specFile', 'stateDir', 'otherWorkspace', 'controllerEnviron', 'ownEnv'])
      assert.equal(report[denied].ok, false, `${denied}: ${JSON.stringify(report[denied])}`);
    // The spec directory's path inside is on the sandbox's private /tmp: a write there never reaches the host.
    assert.equal(existsSync(join(dir, 'escaped.txt')), false, 'nothing written outside the workspace');
    assert.equal(report.writeUsr.ok, false);
    assert.equal(report.loopback.ok, false, `a host loopback port: ${JSON.stringify(report.loopback)}`);
    assert.deepEqual(report.gateway, { ok: true, got: 'gateway pong\n' }, 'the gateway through the relay');
    assert.equal(report.proxyAllowed.ok, true, JSON.stringify(report.proxyAllowed));
    assert.match(report.proxyAllowed.got ?? '', /echo ping/);
    assert.equal(report.proxyDenied.ok, false);
    assert.match(report.proxyDenied.error ?? '', /403/);
    assert.equal(daemonsAlive(), 0, 'no daemon outlives the episode');

    const status = readStatus(dir, 'probe');
    assert.equal(status?.status.phase, 'Succeeded', log);
    const records = readFileSync(join(dir, '.episodic', 'logs', 'default', 'probe', 'episodes.jsonl'), 'utf8');
    const record = JSON.parse(records.trim().split('\n')[0]);
    assert.deepEqual(record.sandbox, { network: 'gateway', resources: 'none' });
    const published = [log, allText(join(dir, '.episodic'))].join('\n');
    for (const secret of [KEY, OTHER_SECRET, ENV_CANARY]) assert.ok(!published.includes(secret), secret);
    assert.match(
      allText(join(dir, '.episodic', 'logs')),
      /sandbox proxy refused: 127\.0\.0\.1:\d+ is not in allowHosts/,
    );
  });

  it('network none: loopback only (no gateway, no proxy); open: the host network, the filesystem rules still hold', async () => {
    const none = await runProbe({ network: 'none' });
    assert.equal(none.res.code, 0, none.res.stdout + none.res.stderr);
    assert.equal(none.report.gateway.ok, false, JSON.stringify(none.report.gateway));
    assert.equal(none.report.loopback.ok, false);
    assert.equal(none.report.proxyAllowed.ok, false, 'no proxy under none');
    const open = await runProbe({ network: 'open' });
    assert.equal(open.res.code, 0, open.res.stdout + open.res.stderr);
    assert.equal(open.report.loopback.ok, true, 'the host loopback is reachable under open');
    assert.deepEqual(open.report.gateway, { ok: true, got: 'gateway pong\n' }, 'directly, no relay');
    for (const denied of ['sshKey', 'specFile', 'stateDir', 'otherWorkspace', 'controllerEnviron'])
      assert.equal(open.report[denied].ok, false, denied);
  });

  it('unsandboxed, the same agent gets every read (so the test above can fail)', async () => {
    const { dir, res, report } = await runProbe(undefined);
    assert.equal(res.code, 0, res.stdout + res.stderr);
    assert.equal(existsSync(join(dir, 'escaped.txt')), true, 'unsandboxed, the write lands on the host');
    for (const got of [
      'sshKey',
      'specFile',
      'stateDir',
      'otherWorkspace',
      'controllerEnviron',
      'writeOutside',
      'loopback',
    ])
      assert.equal(report[got].ok, true, `${got}: ${JSON.stringify(report[got])}`);
    assert.equal(report.sshKey.got, KEY);
    assert.equal(report.otherWorkspace.got, OTHER_SECRET);
  });
});

describe('local sandbox: resources end their own episode (cgroup v1 here), the controller carries on', () => {
  it('a fork bomb and a 10 GiB allocation each fail with reason ResourceLimit; a bounded task beside them succeeds', async () => {
    const task = (name: string, mode: string, resources: Record<string, number>) => ({
      name,
      spec: {
        agent: { command: [NODE, HOSTILE, mode], output: 'text' },
        limits: { maxEpisodes: 1, episodeTimeoutSeconds: 60 },
        sandbox: { network: 'none', resources },
      },
    });
    const calm = {
      name: 'calm',
      spec: {
        agent: { command: ['/bin/sh', '-c', 'echo "<promise>COMPLETE</promise>"'], output: 'text' },
        limits: { maxEpisodes: 1 },
        sandbox: { network: 'none', resources: { pids: 32, memoryMiB: 128, cpu: 0.5 } },
      },
    };
    const dir = specDir([task('bomb', 'forkbomb', { pids: 64 }), task('hog', 'alloc', { memoryMiB: 256 }), calm]);
    const res = await runCli(['run', dir], { timeoutMs: 120_000 });
    const log = res.stdout + res.stderr;
    const record = (name: string) =>
      JSON.parse(
        readFileSync(join(dir, '.episodic', 'logs', 'default', name, 'episodes.jsonl'), 'utf8').split('\n')[0],
      );
    for (const [name, hit] of [
      ['bomb', 'pids'],
      ['hog', 'memory'],
    ]) {
      const r = record(name);
      assert.equal(r.outcome, 'failed', `${name}: ${JSON.stringify(r)}\n${log}`);
      assert.match(r.message, /sandbox: the episode hit its .*ResourceLimit/);
      assert.deepEqual(r.sandbox, { network: 'none', resources: 'cgroup-v1', limitHit: hit });
      assert.equal(readStatus(dir, name)?.status.lastEpisode?.outcome, 'failed');
    }
    // The episode's reason is in its event (a log line locally): "episode 1 failed (ResourceLimit)".
    assert.equal(log.match(/episode 1 failed \(ResourceLimit\)/g)?.length, 2, log);
    assert.equal(readStatus(dir, 'calm')?.status.phase, 'Succeeded', log);
    assert.deepEqual(record('calm').sandbox, { network: 'none', resources: 'cgroup-v1' });
    const groups = ['pids', 'memory'].flatMap((c) => {
      const d = `/sys/fs/cgroup/${c}/episodic`;
      return existsSync(d) ? readdirSync(d).filter((g) => g.startsWith('default.')) : [];
    });
    assert.ok(!groups.some((g) => /^default\.(bomb|hog|calm)\./.test(g)), `groups removed: ${groups.join(',')}`);
  });
});
