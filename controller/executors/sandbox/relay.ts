// The relay inside a sandbox (network: gateway): listens on the sandbox's loopback and forwards each connection
// to a Unix socket the controller serves (gateway-bridge.ts); once it listens, it starts the agent and ends as
// the agent ends. Generic bytes only: what an endpoint admits is decided outside, where the agent cannot reach.
// Usage: relay --listen PORT=SOCKET… -- AGENT ARGV…  (standalone: node built-ins only, bundled as dist/sandbox-relay.js)
import { spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';
import type { Server } from 'node:net';

function parseArgs(argv: string[]): { listen: Array<{ port: number; socket: string }>; command: string[] } {
  const listen: Array<{ port: number; socket: string }> = [];
  let i = 0;
  while (i < argv.length && argv[i] === '--listen') {
    const [port, socket] = (argv[i + 1] ?? '').split('=');
    listen.push({ port: Number(port), socket });
    i += 2;
  }
  if (argv[i] !== '--') throw new Error('usage: relay --listen PORT=SOCKET… -- COMMAND…');
  return { listen, command: argv.slice(i + 1) };
}

function serve(port: number, socket: string): Promise<Server> {
  const server = createServer((inbound) => {
    const outbound = connect(socket);
    inbound.pipe(outbound).pipe(inbound);
    const end = () => {
      inbound.destroy();
      outbound.destroy();
    };
    inbound.on('error', end).on('close', end);
    outbound.on('error', end).on('close', end);
  });
  return new Promise((ready, fail) => {
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => ready(server));
  });
}

async function main(): Promise<void> {
  const { listen, command } = parseArgs(process.argv.slice(2));
  const servers = await Promise.all(listen.map((l) => serve(l.port, l.socket)));
  const [file, ...args] = command;
  if (!file) throw new Error('relay: no command');
  const child = spawn(file, args, { stdio: 'inherit' });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => child.kill(signal));
  child.on('error', (err) => {
    process.stderr.write(`episodic sandbox: cannot start ${file}: ${err.message}\n`);
    process.exit(127);
  });
  child.on('exit', (code, signal) => {
    for (const s of servers) s.close();
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 1);
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`episodic sandbox relay: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(126);
});
