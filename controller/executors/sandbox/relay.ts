// The relay of a sandboxed task (network: gateway): the one process of a relay namespace (relay-process.ts). It
// starts bound to nothing and says "spare"; its first line on stdin (relay-assignment.ts) gives it a task's
// loopback ports and the controller's Unix sockets (gateway-bridge.ts) they forward to. It says "ready" once
// every port listens; any later input ends it (a relay serves one task), and so does the end of its stdin (the
// controller closed it, or died). Generic bytes only: what an endpoint admits is decided outside.
// Usage: relay --spare  (standalone: node built-ins only, bundled as dist/sandbox-relay.js)
import { connect, createServer, isIPv6 } from 'node:net';
import type { Server } from 'node:net';
import { MAX_ASSIGNMENT_BYTES, parseAssignment } from './relay-assignment.ts';
import type { RelayListen } from './relay-assignment.ts';

function serve(l: RelayListen): Promise<Server> {
  const server = createServer((inbound) => {
    const outbound = connect(l.socket);
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
    server.listen(l.port, '127.0.0.1', () => ready(server));
  });
}

function refuse(err: unknown): never {
  process.stderr.write(`episodic sandbox relay: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(126);
}

function main(): void {
  if (process.argv.length !== 3 || process.argv[2] !== '--spare') refuse('usage: relay --spare');
  let input = '';
  let assigned = false;
  process.stdin.on('data', (d: Buffer) => {
    if (assigned) refuse('already serving a task');
    input += d.toString();
    if (input.length > MAX_ASSIGNMENT_BYTES + 1) refuse('assignment longer than its bound');
    const nl = input.indexOf('\n');
    if (nl < 0) return;
    if (nl !== input.length - 1) refuse('already serving a task');
    assigned = true;
    let listen: RelayListen[] = [];
    try {
      listen = parseAssignment(input.slice(0, nl));
    } catch (err) {
      refuse(err);
    }
    Promise.all(listen.map(serve)).then(() => process.stdout.write('ready\n'), refuse);
  });
  // The controller holds our stdin: its end (a close, or the controller's death) is ours.
  process.stdin.on('end', () => process.exit(0)).on('error', () => process.exit(0));
  warm().then(() => process.stdout.write('spare\n'), refuse);
}

/**
 * What net's listen loads lazily (dns, cluster) and compiles at its first call (isIPv6's pattern), ~4 ms here:
 * done while spare, so a task taking the relay waits only for its ports. Nothing listens or connects here.
 */
async function warm(): Promise<void> {
  await Promise.all([import('node:cluster'), import('node:dns')]);
  isIPv6('::1');
}

try {
  main();
} catch (err) {
  refuse(err);
}
