#!/usr/bin/env node
// A hostile stand-in agent for the sandbox tests (test/local/sandbox.test.ts): it tries to reach what a
// sandboxed episode must not, and writes what it got into report.json in its workspace (and stdout).
// Modes (argv[2]): probe (every read, write and connection; then the promise), forkbomb, alloc (10 GiB).
// Targets come from its environment: HOSTILE_HOST_HOME, HOSTILE_SPEC_DIR, HOSTILE_OTHER_WS, HOSTILE_CANARY_REVERSED (the controller's env canary),
// HOSTILE_LOOPBACK_PORT (a host port that is not the gateway), HOSTILE_ALLOWED / HOSTILE_DENIED (host:port).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';

const env = process.env;
const mode = process.argv[2] ?? 'probe';
// Given reversed, so the agent's own environment does not hold the needle it looks for.
const needle = [...(env.HOSTILE_CANARY_REVERSED ?? '')].reverse().join('') || '\0none';

function attempt(fn) {
  try {
    const got = fn();
    return { ok: true, got: String(got).slice(0, 200) };
  } catch (err) {
    return { ok: false, error: err.code ?? err.message };
  }
}

function tcp(port, host = '127.0.0.1', send = '', until = /\n/) {
  return new Promise((done) => {
    const s = connect(Number(port), host);
    let got = '';
    const timer = setTimeout(() => finish({ ok: false, error: 'timeout' }), 3000);
    const finish = (r) => {
      clearTimeout(timer);
      s.destroy();
      done(r);
    };
    s.on('connect', () => s.write(send));
    s.on('data', (d) => {
      got += d;
      if (until.test(got)) finish({ ok: true, got: got.slice(0, 200) });
    });
    s.on('error', (err) => finish({ ok: false, error: err.code ?? err.message }));
  });
}

/** CONNECT target through $HTTPS_PROXY, then a line the target echoes. */
async function viaProxy(target) {
  const proxy = env.HTTPS_PROXY ? new URL(env.HTTPS_PROXY) : undefined;
  if (!proxy) return { ok: false, error: 'no proxy' };
  const r = await tcp(
    proxy.port,
    proxy.hostname,
    `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\nping\n`,
    /echo|^HTTP\/1\.1 [^2]/,
  );
  return r.ok && /^HTTP\/1\.1 200/.test(r.got) ? r : { ok: false, error: r.got?.split('\r\n')[0] ?? r.error };
}

async function probe() {
  const canaryInProc = attempt(() => {
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p)))
      try {
        if (readFileSync(`/proc/${pid}/environ`, 'utf8').includes(needle)) return `found in /proc/${pid}/environ`;
      } catch {}
    throw Object.assign(new Error('not found'), { code: 'NOTFOUND' });
  });
  const report = {
    sshKey: attempt(() => readFileSync(join(env.HOSTILE_HOST_HOME, '.ssh/id_ed25519'), 'utf8')),
    specFile: attempt(() => readFileSync(join(env.HOSTILE_SPEC_DIR, 'probe.yaml'), 'utf8')),
    stateDir: attempt(() => readdirSync(join(env.HOSTILE_SPEC_DIR, '.episodic', 'status', 'default')).join(',')),
    otherWorkspace: attempt(() => readFileSync(join(env.HOSTILE_OTHER_WS, 'secret.txt'), 'utf8')),
    controllerEnviron: canaryInProc,
    ownEnv: attempt(() => {
      if (!Object.values(env).some((v) => v.includes(needle)))
        throw Object.assign(new Error('absent'), { code: 'ABSENT' });
      return 'canary in own env';
    }),
    writeOutside: attempt(() => writeFileSync(join(env.HOSTILE_SPEC_DIR, 'escaped.txt'), 'out')),
    writeUsr: attempt(() => writeFileSync('/usr/escaped.txt', 'out')),
    loopback: await tcp(env.HOSTILE_LOOPBACK_PORT, '127.0.0.1', 'hello\n'),
    gateway: env.ANTHROPIC_BASE_URL
      ? await fetch(`${env.ANTHROPIC_BASE_URL}/v1/ping`).then(
          async (r) => ({ ok: r.ok, got: await r.text() }),
          (err) => ({ ok: false, error: err.cause?.code ?? err.message }),
        )
      : { ok: false, error: 'no gateway' },
    proxyAllowed: env.HOSTILE_ALLOWED ? await viaProxy(env.HOSTILE_ALLOWED) : { ok: false, error: 'unset' },
    proxyDenied: env.HOSTILE_DENIED ? await viaProxy(env.HOSTILE_DENIED) : { ok: false, error: 'unset' },
  };
  // A daemon meant to outlive the episode: its argv names it, for the test to look for on the host.
  if (env.HOSTILE_DAEMON_TAG) spawn('sleep', [env.HOSTILE_DAEMON_TAG], { detached: true, stdio: 'ignore' }).unref();
  writeFileSync('report.json', JSON.stringify(report, null, 2));
  process.stdout.write(`${JSON.stringify(Object.fromEntries(Object.entries(report).map(([k, v]) => [k, v.ok])))}\n`);
  process.stdout.write('<promise>COMPLETE</promise>\n');
}

if (mode === 'probe') await probe();
else if (mode === 'forkbomb') {
  // Unbounded: each shell starts two more; only the sandbox's pids bound stops it.
  spawn('/bin/sh', ['-c', 'b() { b & b & wait; }; b'], { stdio: 'ignore' });
  await new Promise(() => undefined);
} else if (mode === 'alloc') {
  const held = [];
  for (let i = 0; i < 160; i++) held.push(Buffer.alloc(64 * 1024 * 1024, 1)); // 10 GiB, touched
  process.stdout.write(`allocated ${held.length * 64} MiB\n<promise>COMPLETE</promise>\n`);
}
