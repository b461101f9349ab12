// The relay of a sandboxed task (network: gateway): the one process of the task's relay namespace
// (relay-holder.ts). It listens on that namespace's loopback and forwards each connection to a Unix socket the
// controller serves (gateway-bridge.ts); it says "ready" once every port listens and ends when its stdin does
// (the controller closed it, or died). Generic bytes only: what an endpoint admits is decided outside.
// Usage: relay --listen PORT=SOCKET…  (standalone: node built-ins only, bundled as dist/sandbox-relay.js)
import { connect, createServer } from 'node:net';
import type { Server } from 'node:net';

function parseArgs(argv: string[]): Array<{ port: number; socket: string }> {
  const listen: Array<{ port: number; socket: string }> = [];
  for (let i = 0; i < argv.length; i += 2) {
    const [port, socket] = (argv[i + 1] ?? '').split('=');
    if (argv[i] !== '--listen' || !socket) throw new Error('usage: relay --listen PORT=SOCKET…');
    listen.push({ port: Number(port), socket });
  }
  return listen;
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
  await Promise.all(parseArgs(process.argv.slice(2)).map((l) => serve(l.port, l.socket)));
  process.stdout.write('ready\n');
  // The controller holds our stdin: its end (a close, or the controller's death) is ours.
  process.stdin.on('end', () => process.exit(0)).on('error', () => process.exit(0));
  process.stdin.resume();
}

main().catch((err: unknown) => {
  process.stderr.write(`episodic sandbox relay: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(126);
});
