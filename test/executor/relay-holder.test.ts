// The relay of network: gateway is started once per task and kept (relay-holder.ts): a task's episodes share
// it, another task never does, a relay that died is replaced at the next episode, and endRelay ends it; an
// unprivileged controller (bwrap makes user namespaces) enters it too. Real bwrap, nsenter, Node relay and an
// HTTP server standing in for the gateway.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SandboxSchema } from '../../controller/api/sandbox.ts';
import { prepareSandbox } from '../../controller/executors/sandbox/episode-sandbox.ts';
import type { EpisodeSandbox } from '../../controller/executors/sandbox/episode-sandbox.ts';
import { endRelay, relayOpening, spareStarted } from '../../controller/executors/sandbox/relay-holder.ts';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { launchEpisode } from '../../controller/executors/local/episode-launcher.ts';
import { episodeLogPath } from '../../controller/util/state-layout.ts';
import { NODE, REPO, tempDir } from '../support/local.ts';

const FETCH =
  'fetch(process.env.ANTHROPIC_BASE_URL + "/v1/ping").then(r => r.text()).then(t => process.stdout.write(t))';

/** The host's view of a pid's children (the relay is the only child of its namespace's init). */
function childOf(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ')[0]);
}

function run(argv: string[], env: Record<string, string>): Promise<string> {
  return new Promise((done, fail) =>
    execFile(argv[0], argv.slice(1), { env, timeout: 60_000 }, (err, stdout, stderr) =>
      err ? fail(new Error(`${err.message}\n${stderr}`)) : done(stdout),
    ),
  );
}

/** Resolves once the process is gone (its /proc entry removed). */
async function gone(pid: number): Promise<void> {
  while (existsSync(`/proc/${pid}`)) await new Promise((r) => setTimeout(r, 20));
}

describe('the relay of network gateway: once per task, kept between its episodes', () => {
  const server = createServer((_req, res) => res.end('pong'));
  let env: Record<string, string>;
  const dir = tempDir('episodic-relay-');
  before(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    env = { ANTHROPIC_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  });
  after(() => server.close());

  const open = (name: string) =>
    prepareSandbox({
      sandbox: SandboxSchema.parse({}),
      stateDir: join(dir, '.episodic'),
      namespace: 'default',
      name,
      workspace: dir,
      env,
    });
  const fetchInside = (sandbox: EpisodeSandbox) => {
    const wrapped = sandbox.wrap([NODE, '-e', FETCH], env);
    return run(wrapped.argv, wrapped.env);
  };

  it("a task's episodes share one relay; another task gets its own; each reaches the gateway", async () => {
    assert.equal(await spareStarted(), undefined, 'no spare before the controller has a gateway task');
    const first = await open('a');
    assert.equal(await fetchInside(first), 'pong');
    await first.close();
    const second = await open('a');
    const other = await open('b');
    assert.ok(first.relayPid, 'a relay');
    assert.equal(second.relayPid, first.relayPid, 'the second episode of a entered the same relay');
    assert.notEqual(other.relayPid, first.relayPid, 'b never shares a');
    assert.equal(await fetchInside(second), 'pong');
    assert.equal(await fetchInside(other), 'pong');
    await Promise.all([second.close(), other.close()]);
  });

  it('a relay that died is replaced at the next episode; endRelay ends an idle one', async () => {
    const before = await open('a');
    await before.close();
    const relay = childOf(before.relayPid as number);
    process.kill(relay, 'SIGKILL');
    await gone(before.relayPid as number); // its namespace's init ends with it
    const after = await open('a');
    assert.notEqual(after.relayPid, before.relayPid);
    assert.equal(await fetchInside(after), 'pong');
    await after.close();
    endRelay('default/a');
    endRelay('default/b');
    await gone(after.relayPid as number);
  });

  it('an episode whose relay dies keeps its namespace: its next process starts there (never elsewhere)', async () => {
    const box = await open('c');
    const inner = box.relayPid as number;
    const outer = Number(readFileSync(`/proc/${inner}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
    const netNs = readlinkSync(`/proc/${inner}/ns/net`);
    process.kill(childOf(inner), 'SIGKILL');
    await gone(outer); // reaped: the controller has seen the holder end
    const wrapped = box.wrap(['/bin/sh', '-c', 'readlink /proc/self/ns/net'], env);
    assert.equal((await run(wrapped.argv, wrapped.env)).trim(), netNs);
    await box.close();
    endRelay('default/c');
  });

  it("a task's first episode takes the spare, started beforehand; the spare serves that task only", async () => {
    const first = await open('s1');
    await first.close();
    const spare = await spareStarted();
    assert.ok(spare && existsSync(`/proc/${spare}`), 'a spare relay is running before the next task asks');
    const second = await open('s2');
    assert.equal(second.relayPid, spare, "s2's first episode entered the spare");
    assert.equal(await fetchInside(second), 'pong');
    const next = await spareStarted();
    assert.ok(next !== undefined && next !== spare, 'a new spare started; the taken one is never a spare again');
    const third = await open('s3');
    assert.equal(third.relayPid, next);
    const again = await open('s2');
    assert.equal(again.relayPid, spare, "s2's next episode: its own relay, not s3's");
    assert.equal(await fetchInside(third), 'pong');
    await Promise.all([second.close(), third.close(), again.close()]);
    const last = (await spareStarted()) as number;
    for (const task of ['s1', 's2', 's3', 'a', 'b', 'c']) endRelay(`default/${task}`);
    await gone(last); // the controller's last gateway task done: no idle spare
    await gone(spare);
  });

  it("an unused spare ends when its controller dies (SIGKILL: its pipe closes, bwrap's parent is gone)", async () => {
    const state = tempDir('episodic-relay-spare-');
    const at = (file: string) => JSON.stringify(join(REPO, file));
    // A controller's own loop keeps it alive (a started spare does not); it prints the spare and waits.
    const script = `
      setInterval(() => undefined, 1000);
      import { prepareSandbox } from ${at('controller/executors/sandbox/episode-sandbox.ts')};
      import { spareStarted } from ${at('controller/executors/sandbox/relay-holder.ts')};
      import { SandboxSchema } from ${at('controller/api/sandbox.ts')};
      const box = await prepareSandbox({ sandbox: SandboxSchema.parse({}), stateDir: ${JSON.stringify(state)} + '/.episodic',
        namespace: 'default', name: 'dies', workspace: ${JSON.stringify(state)}, env: ${JSON.stringify(env)} });
      await box.close();
      console.log(await spareStarted());`;
    const controller = spawn(NODE, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const spare = await new Promise<number>((ok, fail) => {
      controller.once('exit', (code) => fail(new Error(`the controller exited ${code} before naming its spare`)));
      let out = '';
      controller.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) ok(Number(out.trim()));
      });
    });
    assert.ok(spare > 0 && existsSync(`/proc/${spare}`), 'the spare runs beside the dying controller');
    controller.kill('SIGKILL');
    await gone(spare);
  });

  it('an unprivileged controller (uid 65534): episodes enter the relay through its user namespace', {
    skip: process.getuid?.() !== 0 && 'dropping to another uid needs root',
  }, async () => {
    const state = tempDir('episodic-relay-nobody-');
    chmodSync(state, 0o777);
    const at = (file: string) => JSON.stringify(join(REPO, file));
    // Two episodes of one task in a controller process of its own, as nobody; each fetches the gateway inside.
    const script = `
      import { prepareSandbox } from ${at('controller/executors/sandbox/episode-sandbox.ts')};
      import { SandboxSchema } from ${at('controller/api/sandbox.ts')};
      import { execFile, spawn } from 'node:child_process';
      import { promisify } from 'node:util';
      const env = ${JSON.stringify(env)};
      const seen = [];
      for (const n of [1, 2]) {
        const box = await prepareSandbox({ sandbox: SandboxSchema.parse({}), stateDir: ${JSON.stringify(state)} + '/.episodic',
          namespace: 'default', name: 'nobody', workspace: ${JSON.stringify(state)}, env });
        const w = box.wrap([process.execPath, '-e', ${JSON.stringify(FETCH)}], env);
        const { stdout } = await promisify(execFile)(w.argv[0], w.argv.slice(1), { env: w.env, timeout: 60000 });
        seen.push({ relay: box.relayPid, got: stdout, userns: w.argv.some((a) => a.startsWith('--user=')) });
        await box.close();
      }
      console.log(JSON.stringify(seen));`;
    const out = await run(
      [
        '/usr/bin/setpriv',
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        NODE,
        '--input-type=module',
        '-e',
        script,
      ],
      { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    );
    const seen = JSON.parse(out.trim().split('\n').at(-1) ?? '[]');
    assert.equal(seen.length, 2);
    for (const s of seen) assert.deepEqual([s.got, s.userns], ['pong', true]);
    assert.equal(seen[0].relay, seen[1].relay, 'one relay for both episodes');
  });

  it("a task's relay starts beside its workspace's set-up: it is there before the first episode asks", async () => {
    const spec = AgentTaskSpecSchema.parse({
      prompt: 'p',
      agent: { command: [NODE, '-e', FETCH], env: Object.entries(env).map(([name, value]) => ({ name, value })) },
      workspace: 'ws',
      sandbox: {},
    });
    let openedBeforeSpawn: boolean | undefined;
    const episode = await launchEpisode({
      root: dir,
      stateDir: join(dir, '.episodic'),
      specFile: join(dir, 't.yaml'),
      namespace: 'default',
      name: 'warm',
      number: 1,
      spec,
      status: { episodes: 0 } as never,
      beforeSpawn: async () => {
        openedBeforeSpawn = relayOpening('default/warm');
      },
    });
    const result = await episode.result;
    assert.equal(openedBeforeSpawn, true, 'the relay was started before the episode leased it');
    assert.equal(result.exitCode, 0, result.message);
    assert.match(readFileSync(episodeLogPath(join(dir, '.episodic'), 'default', 'warm', 1), 'utf8'), /pong/);
    endRelay('default/warm');
  });
});
