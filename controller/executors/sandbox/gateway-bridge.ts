// The controller's end of network: gateway: one Unix socket per gateway endpoint, forwarding to its host:port,
// and the CONNECT proxy's socket, admitting only the routes' host:port pairs (admitConnect). The directory is
// bind-mounted into the sandbox, where the relay (relay.ts) listens on loopback and forwards here.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admitConnect, PROXY_SOCKET } from './gateway-routes.ts';
import type { GatewayRoutes } from './gateway-routes.ts';

// A request line longer than this is no CONNECT of ours: refused before more is read.
const REQUEST_HEAD_MAX = 8192;

export interface GatewayBridge {
  socketDir: string;
  /** Connections refused by the proxy, "host:port is not in allowHosts": for the episode log. */
  refused: string[];
  close(): Promise<void>;
}

export async function openGatewayBridge(routes: GatewayRoutes): Promise<GatewayBridge> {
  // Short and private: a Unix socket path has room for ~107 bytes, and only the controller's user may connect.
  const socketDir = mkdtempSync(join(tmpdir(), 'episodic-sb-'));
  const servers: Server[] = [];
  const refused: string[] = [];
  const listen = (socket: string, onConnection: (s: Socket) => void) =>
    new Promise<void>((ready, fail) => {
      const server = createServer(onConnection);
      servers.push(server);
      server.once('error', fail);
      server.listen(join(socketDir, socket), () => ready());
    });
  try {
    for (const u of routes.upstreams) await listen(u.socket, (inbound) => splice(inbound, connect(u.port, u.host)));
    if (routes.proxyPort !== undefined)
      await listen(PROXY_SOCKET, (inbound) => proxyConnection(inbound, routes.allow, refused));
  } catch (err) {
    await closeAll(servers, socketDir);
    throw err;
  }
  return { socketDir, refused, close: () => closeAll(servers, socketDir) };
}

function proxyConnection(inbound: Socket, allow: readonly string[], refused: string[]): void {
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0 && head.length < REQUEST_HEAD_MAX) return;
    inbound.off('data', onData);
    const line = head.subarray(0, Math.max(head.indexOf('\r\n'), 0)).toString('latin1');
    const verdict = end < 0 ? { refused: 'request head too long' } : admitConnect(line, allow);
    if ('refused' in verdict) {
      refused.push(verdict.refused);
      inbound.end(`HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n\r\nepisodic sandbox: ${verdict.refused}\n`);
      return;
    }
    const outbound = connect(verdict.port, verdict.host, () => {
      inbound.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      const rest = head.subarray(end + 4);
      if (rest.length > 0) outbound.write(rest);
      splice(inbound, outbound);
    });
    outbound.once('error', () => inbound.end('HTTP/1.1 502 Bad Gateway\r\n\r\n'));
  };
  inbound.on('data', onData);
  inbound.on('error', () => inbound.destroy());
}

function splice(a: Socket, b: Socket): void {
  a.pipe(b).pipe(a);
  const end = () => {
    a.destroy();
    b.destroy();
  };
  a.on('error', end).on('close', end);
  b.on('error', end).on('close', end);
}

async function closeAll(servers: Server[], socketDir: string): Promise<void> {
  await Promise.all(
    servers.map(
      (s) =>
        new Promise<void>((done) => {
          s.close(() => done());
        }),
    ),
  );
  rmSync(socketDir, { recursive: true, force: true });
}
