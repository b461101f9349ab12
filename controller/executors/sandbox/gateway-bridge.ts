// The controller's end of network: gateway: one Unix socket per gateway endpoint, forwarding to its host:port,
// and the CONNECT proxy's socket, admitting only the routes' host:port pairs (admitConnect). The directory is
// bind-mounted into the sandbox, where the relay (relay.ts) listens on loopback and forwards here.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admitConnect, parseHead } from './connect-rule.ts';
import { handleConnect, splice } from './connect-proxy.ts';
import { PROXY_SOCKET } from './gateway-routes.ts';
import type { GatewayRoutes } from './gateway-routes.ts';

export interface GatewayBridge {
  socketDir: string;
  /** Connections refused by the proxy, "host:port is not in allowHosts": for the episode log. */
  refused: string[];
  close(): Promise<void>;
}

/** A relay's socket directory, empty until a task's bridge opens in it. */
export function makeSocketDir(): string {
  // Short and private: a Unix socket path has room for ~107 bytes, and only the controller's user may connect.
  return mkdtempSync(join(tmpdir(), 'episodic-sb-'));
}

/** The task's sockets in socketDir (its relay's, made by makeSocketDir); close() removes the directory. */
export async function openGatewayBridge(routes: GatewayRoutes, socketDir: string): Promise<GatewayBridge> {
  const servers: Server[] = [];
  const refused: string[] = [];
  const listen = (socket: string, onConnection: (s: Socket) => void) =>
    new Promise<void>((ready, fail) => {
      const server = createServer(onConnection);
      servers.push(server);
      server.once('error', fail);
      // Held by a task's relay between episodes: it never keeps the controller's process alive on its own.
      server.listen(join(socketDir, socket), () => ready()).unref();
    });
  try {
    for (const u of routes.upstreams) await listen(u.socket, (inbound) => splice(inbound, connect(u.port, u.host)));
    if (routes.proxyPort !== undefined)
      await listen(PROXY_SOCKET, (inbound) =>
        handleConnect(
          inbound,
          (head) => admitConnect(parseHead(head).line, routes.allow),
          (why) => refused.push(why),
        ),
      );
  } catch (err) {
    await closeAll(servers, socketDir);
    throw err;
  }
  return { socketDir, refused, close: () => closeAll(servers, socketDir) };
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
