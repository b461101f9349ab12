// /metrics, /healthz and /readyz on one small HTTP server (node:http: no framework needed for three routes).
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EpisodicMetrics } from './metrics.ts';

export interface MetricsServerOptions {
  /** "host:port", ":port" or "port"; port 0 picks a free one. */
  address: string;
  metrics: EpisodicMetrics;
  /** Readiness: e.g. caches synced. Liveness is "the event loop answers". */
  ready?: () => boolean;
}

export interface RunningServer {
  server: Server;
  url: string;
  close(): Promise<void>;
}

export function parseAddress(address: string): { host: string; port: number } {
  const match = /^(?:(.*):)?(\d+)$/.exec(address.trim());
  if (!match) throw new Error(`invalid address "${address}": expected HOST:PORT, :PORT or PORT`);
  const port = Number(match[2]);
  if (port > 65535) throw new Error(`invalid address "${address}": port out of range`);
  const host = (match[1] ?? '').replace(/^\[(.*)\]$/, '$1') || '0.0.0.0';
  return { host, port };
}

export async function startMetricsServer(opts: MetricsServerOptions): Promise<RunningServer> {
  const { host, port } = parseAddress(opts.address);
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/metrics') {
      opts.metrics.text().then(
        (body) => {
          res.writeHead(200, { 'Content-Type': opts.metrics.registry.contentType });
          res.end(body);
        },
        (err: unknown) => {
          res.writeHead(500).end(String(err));
        },
      );
    } else if (path === '/healthz') {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok\n');
    } else if (path === '/readyz') {
      const ready = opts.ready ? opts.ready() : true;
      res.writeHead(ready ? 200 : 503, { 'Content-Type': 'text/plain' }).end(ready ? 'ok\n' : 'not ready\n');
    } else {
      res.writeHead(404).end('not found\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  const shownHost = bound.address.includes(':') ? `[${bound.address}]` : bound.address;
  return {
    server,
    url: `http://${shownHost}:${bound.port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
