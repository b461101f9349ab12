// The sandbox's rules as pure functions, table-tested: the bubblewrap argv of a plan, the gateway routes and the
// CONNECT admission, the install directories of a command, the cgroup settings and the bound-hit verdict, and the
// words of a machine that cannot sandbox. Plus the one impure rule: no bwrap → the episode does not start.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { launchEpisode } from '../../controller/executors/local/episode-launcher.ts';
import { bwrapArgv, joinNetArgv, relayHolderArgv } from '../../controller/executors/sandbox/bwrap-argv.ts';
import type { SandboxPlan } from '../../controller/executors/sandbox/bwrap-argv.ts';
import { admitConnect, gatewayRoutes, relayAssignment } from '../../controller/executors/sandbox/gateway-routes.ts';
import { installDirOf, installDirs, programsOf } from '../../controller/executors/sandbox/install-dirs.ts';
import { sandboxUnavailable } from '../../controller/executors/sandbox/preflight.ts';
import {
  cgroupSettings,
  counterOf,
  limitHit,
  removeRetryDelays,
  rlimitArgs,
} from '../../controller/executors/sandbox/resources.ts';
import { tempDir } from '../support/local.ts';

const plan = (over: Partial<SandboxPlan> = {}): SandboxPlan => ({
  network: 'gateway',
  workspace: '/w/ws/a',
  home: '/w/.episodic/sandbox/default/a/home',
  readOnly: ['/opt/agent/node_modules'],
  readWrite: ['/w/.episodic/logs/default/a/episode-1.ops'],
  rootLinks: { bin: 'usr/bin', lib: 'usr/lib' },
  env: { B: '2', A: '1' },
  command: ['agent', '-p'],
  ...over,
});

/** The pairs of a flag that takes two arguments: ["--ro-bind", a, b] → [a, b]. */
function pairs(argv: string[], flag: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [i, a] of argv.entries()) if (a === flag) out.push([argv[i + 1], argv[i + 2]]);
  return out;
}

describe('bwrapArgv', () => {
  it('namespaces, parent death, a new session; the net namespace unless network is open', () => {
    const argv = bwrapArgv('/usr/bin/bwrap', plan());
    for (const flag of ['--die-with-parent', '--new-session', '--unshare-pid', '--unshare-net', '--clearenv'])
      assert.ok(argv.includes(flag), flag);
    assert.equal(argv[0], '/usr/bin/bwrap');
    assert.ok(bwrapArgv('b', plan({ network: 'none' })).includes('--unshare-net'));
    assert.ok(!bwrapArgv('b', plan({ network: 'open' })).includes('--unshare-net'));
  });
  it('mounts: /usr /etc and installs read-only, workspace home and files read-write, private /tmp, root read-only', () => {
    const argv = bwrapArgv('b', plan());
    assert.deepEqual(pairs(argv, '--ro-bind'), [
      ['/usr', '/usr'],
      ['/etc', '/etc'],
      ['/opt/agent/node_modules', '/opt/agent/node_modules'],
    ]);
    assert.deepEqual(pairs(argv, '--bind'), [
      ['/w/ws/a', '/w/ws/a'],
      ['/w/.episodic/logs/default/a/episode-1.ops', '/w/.episodic/logs/default/a/episode-1.ops'],
      ['/w/.episodic/sandbox/default/a/home', '/w/.episodic/sandbox/default/a/home'],
    ]);
    assert.deepEqual(pairs(argv, '--symlink'), [
      ['usr/bin', '/bin'],
      ['usr/lib', '/lib'],
    ]);
    assert.ok(argv.join(' ').includes('--tmpfs /tmp'));
    assert.ok(argv.indexOf('--remount-ro') > argv.lastIndexOf('--bind'), 'root read-only after the binds');
    assert.ok(!argv.some((a) => a === '/' && argv[argv.indexOf(a) - 1] === '--bind'), 'nothing binds the host root');
  });
  it('a mount inside the workspace comes after it (parents first)', () => {
    const argv = bwrapArgv('b', plan({ readOnly: ['/w/ws/a/vendor'], readWrite: [] }));
    const at = (p: string) => argv.indexOf(p);
    assert.ok(at('/w/ws/a') < at('/w/ws/a/vendor'));
  });
  it('the environment exactly the plan, sorted; then the command; the workspace is the working directory', () => {
    const argv = bwrapArgv('b', plan());
    assert.deepEqual(pairs(argv, '--setenv'), [
      ['A', '1'],
      ['B', '2'],
    ]);
    assert.deepEqual(argv.slice(argv.indexOf('--')), ['--', 'agent', '-p']);
    assert.deepEqual(argv.slice(argv.indexOf('--chdir'), argv.indexOf('--chdir') + 2), ['--chdir', '/w/ws/a']);
    assert.ok(!argv.includes('/run/episodic'), "the relay's sockets are the holder's, never the episode's");
  });
  it('network gateway with the relay joined: no net namespace of its own (the relay holder has it)', () => {
    assert.ok(!bwrapArgv('b', plan({ netJoined: true })).includes('--unshare-net'));
    assert.ok(bwrapArgv('b', plan({ network: 'none', netJoined: true })).includes('--unshare-net'));
  });
});

describe('relayHolderArgv and joinNetArgv', () => {
  const holder = relayHolderArgv(
    '/usr/bin/bwrap',
    {
      socketDir: '/tmp/episodic-sb-x',
      readOnly: ['/opt/node'],
      rootLinks: { bin: 'usr/bin' },
      command: ['/opt/node/bin/node', '/opt/relay.js', '--spare'],
    },
    3,
  );
  it('its own net and pid namespaces, reported on the info fd; only the sockets, the install and /usr /etc', () => {
    for (const flag of ['--die-with-parent', '--unshare-net', '--unshare-pid', '--clearenv', '--remount-ro'])
      assert.ok(holder.includes(flag), flag);
    assert.deepEqual(holder.slice(holder.indexOf('--info-fd'), holder.indexOf('--info-fd') + 2), ['--info-fd', '3']);
    assert.deepEqual(pairs(holder, '--ro-bind'), [
      ['/usr', '/usr'],
      ['/etc', '/etc'],
      ['/opt/node', '/opt/node'],
      ['/tmp/episodic-sb-x', '/run/episodic'],
    ]);
    assert.deepEqual(pairs(holder, '--bind'), [], 'nothing writable');
    assert.ok(!holder.includes('--dev'), 'no /dev: unprivileged, it would nest a user namespace episodes cannot enter');
    assert.deepEqual(pairs(holder, '--setenv'), [['PATH', '/usr/bin:/bin']]);
    assert.deepEqual(holder.slice(holder.indexOf('--') + 1, holder.indexOf('--') + 3), [
      '/opt/node/bin/node',
      '/opt/relay.js',
    ]);
  });
  it("an episode enters the net namespace by the controller's descriptors; the user namespace only when bwrap made one", () => {
    assert.deepEqual(joinNetArgv('/usr/bin/nsenter', { pid: 7, netFd: 21 }), [
      '/usr/bin/nsenter',
      '--net=/proc/7/fd/21',
      '--',
    ]);
    assert.deepEqual(joinNetArgv('/usr/bin/nsenter', { pid: 7, netFd: 21, userFd: 22 }), [
      '/usr/bin/nsenter',
      '--user=/proc/7/fd/22',
      '--preserve-credentials',
      '--net=/proc/7/fd/21',
      '--',
    ]);
  });
});

describe('gatewayRoutes and admitConnect', () => {
  it('an http endpoint is relayed to loopback, its path kept; https goes through the proxy', () => {
    const r = gatewayRoutes(
      {
        ANTHROPIC_BASE_URL: 'http://gw.internal:8080/v1',
        OPENAI_BASE_URL: 'https://api.openai.com',
        OTHER: 'http://x:1',
      },
      ['github.com:443'],
    );
    assert.equal(r.env.ANTHROPIC_BASE_URL, 'http://127.0.0.1:41000/v1');
    assert.equal(r.env.OPENAI_BASE_URL, 'https://api.openai.com', 'unchanged: TLS names its host');
    assert.equal(r.env.OTHER, 'http://x:1', 'not an endpoint variable');
    assert.deepEqual(r.upstreams, [
      { env: 'ANTHROPIC_BASE_URL', host: 'gw.internal', port: 8080, localPort: 41000, socket: 'gw-0.sock' },
    ]);
    assert.deepEqual(r.allow, ['github.com:443', 'api.openai.com:443']);
    assert.equal(r.env.HTTPS_PROXY, 'http://127.0.0.1:41099');
    assert.equal(r.env.NO_PROXY, '127.0.0.1,localhost');
    assert.equal(relayAssignment(r), 'listen 41000=/run/episodic/gw-0.sock 41099=/run/episodic/proxy.sock');
  });
  it('no endpoint and no allowHosts: nothing relayed, no proxy', () => {
    const r = gatewayRoutes({ A: 'b' }, []);
    assert.deepEqual(r, { env: { A: 'b' }, upstreams: [], allow: [] });
  });
  it('two variables naming one endpoint share one relay port', () => {
    const r = gatewayRoutes({ ANTHROPIC_BASE_URL: 'http://gw:80', EPISODIC_GATEWAY_URL: 'http://gw' }, []);
    assert.equal(r.upstreams.length, 1);
    assert.equal(r.env.ANTHROPIC_BASE_URL, 'http://127.0.0.1:41000');
    assert.equal(r.env.EPISODIC_GATEWAY_URL, 'http://127.0.0.1:41000');
  });
  const table: Array<[string, unknown]> = [
    ['CONNECT github.com:443 HTTP/1.1', { host: 'github.com', port: 443 }],
    ['CONNECT GitHub.com:443 HTTP/1.1', { host: 'github.com', port: 443 }],
    ['CONNECT github.com:22 HTTP/1.1', { refused: 'github.com:22 is not in allowHosts', status: 403 }],
    ['CONNECT evil.com:443 HTTP/1.1', { refused: 'evil.com:443 is not in allowHosts', status: 403 }],
    ['GET http://github.com/ HTTP/1.1', { refused: 'not a CONNECT request', status: 403 }],
    ['CONNECT [::1]:8080 HTTP/1.1', { host: '::1', port: 8080 }],
  ];
  for (const [line, verdict] of table)
    it(`admitConnect: ${line}`, () => assert.deepEqual(admitConnect(line, ['github.com:443', '[::1]:8080']), verdict));
});

describe('install directories', () => {
  it('an interpreter names its script too; never the prompt', () => {
    assert.deepEqual(programsOf(['node', '/a/agent.mjs', '-p']), ['node', '/a/agent.mjs']);
    assert.deepEqual(programsOf(['claude', '/a/b']), ['claude']);
  });
  const table: Array<[string, string | undefined]> = [
    ['/usr/bin/git', undefined],
    ['/opt/c/node_modules/@anthropic-ai/claude-code/bin/claude.exe', '/opt/c/node_modules'],
    ['/home/u/.local/bin/codex', '/home/u/.local/bin'],
  ];
  for (const [path, dir] of table) it(`installDirOf ${path}`, () => assert.equal(installDirOf(path), dir));
  it('named and resolved, without directories inside others', () =>
    assert.deepEqual(
      installDirs([
        { named: '/opt/c/node_modules/.bin/claude', resolved: '/opt/c/node_modules/x/claude.exe' },
        { named: '/opt/c/node_modules/y/z/bin/z', resolved: '/opt/c/node_modules/y/z/bin/z' },
      ]),
      ['/opt/c/node_modules'],
    ));
});

describe('resources', () => {
  it('cgroup v1 files of each bound', () =>
    assert.deepEqual(cgroupSettings({ memoryMiB: 256, pids: 64, cpu: 1.5 }), [
      { controller: 'memory', file: 'memory.limit_in_bytes', value: String(256 * 1024 * 1024) },
      { controller: 'pids', file: 'pids.max', value: '64' },
      { controller: 'cpu', file: 'cpu.cfs_period_us', value: '100000' },
      { controller: 'cpu', file: 'cpu.cfs_quota_us', value: '150000' },
    ]));
  it('rlimits where no cgroup can be written: address space and nproc', () =>
    assert.deepEqual(rlimitArgs({ memoryMiB: 1, pids: 9 }), ['--as=1048576', '--nproc=9']));
  it('the verdict from the counters', () => {
    assert.equal(limitHit({ oomKills: 1, pidsRefused: 3 }), 'memory');
    assert.equal(limitHit({ oomKills: 0, pidsRefused: 3 }), 'pids');
    assert.equal(limitHit({ oomKills: 0, pidsRefused: 0 }), undefined);
    assert.equal(counterOf('oom_kill_disable 0\nunder_oom 0\noom_kill 2\n', 'oom_kill'), 2);
    assert.equal(counterOf('max 0\n', 'max'), 0);
  });
  it("a group's removal is retried soon first (its init ends ~1 ms after bwrap), then less often, within budget", () => {
    assert.deepEqual(removeRetryDelays(100, 25), [1, 2, 4, 8, 16, 25, 25, 19]);
    assert.deepEqual(removeRetryDelays(3, 25), [1, 2]);
    const delays = removeRetryDelays();
    assert.equal(delays[0], 1);
    assert.equal(Math.max(...delays), 25);
    assert.equal(
      delays.reduce((a, b) => a + b),
      1000,
    );
  });
});

describe('a machine that cannot sandbox', () => {
  it('names the package when bwrap is missing, the setting when namespaces are off', () => {
    assert.match(
      sandboxUnavailable({ bwrap: '/usr/bin/bwrap', spawnError: 'ENOENT', root: true }),
      /install the bubblewrap package \(Debian\/Ubuntu: apt-get install bubblewrap\)/,
    );
    const off = sandboxUnavailable({
      bwrap: 'b',
      stderr: 'bwrap: No permissions to creating new namespace',
      unprivilegedUsernsClone: '0',
      root: false,
    });
    assert.match(off, /kernel\.unprivileged_userns_clone=1/);
    assert.match(off, /No permissions/);
    assert.match(
      sandboxUnavailable({ bwrap: 'b', stderr: 'x', maxUserNamespaces: '0', root: true }),
      /user\.max_user_namespaces/,
    );
  });
  it('a sandboxed episode without bwrap does not start: a fatal result naming file, task, field and package', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'ws'), { recursive: true });
    const spec = AgentTaskSpecSchema.parse({
      prompt: 'p',
      agent: { command: ['/bin/true'] },
      workspace: 'ws',
      sandbox: {},
    });
    const episode = await launchEpisode({
      root: dir,
      stateDir: join(dir, '.episodic'),
      specFile: join(dir, 't.yaml'),
      namespace: 'default',
      name: 't',
      number: 1,
      spec,
      status: { episodes: 0 } as never,
      bwrap: join(dir, 'no-such-bwrap'),
    });
    assert.equal(episode.pid, undefined, 'nothing started');
    const result = await episode.result;
    assert.equal(result.errorClass, 'fatal');
    assert.match(
      result.message ?? '',
      /t\.yaml: AgentTask default\/t: spec\.sandbox\.enabled: .*not found; install the bubblewrap package/,
    );
  });
});
