// The controller's CONNECT proxy on a cluster (chart sandbox.proxy): sandboxed pods reach their allowHosts
// through it. Who asks is the Proxy-Authorization credential (made with the controller's key, proxy-env.ts);
// what is admitted is the task's allow list, by the one rule of both modes (connect-rule.ts).
import { createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import { parseAddress } from '../../metrics/server.ts';
import { handleConnect } from '../sandbox/connect-proxy.ts';
import { admitClusterConnect } from '../sandbox/connect-rule.ts';

export interface SandboxProxyOptions {
  /** "host:port" (":3128" binds every address). */
  listen: string;
  key: Buffer;
  /** A task's admitted pairs now, undefined when it is not a proxied sandboxed task. */
  allowOf: (task: { namespace: string; name: string }) => readonly string[] | undefined;
  log: Logger;
}

export interface SandboxProxy {
  port: number;
  close(): Promise<void>;
}

export async function serveSandboxProxy(opts: SandboxProxyOptions): Promise<SandboxProxy> {
  const { host, port } = parseAddress(opts.listen);
  const open = new Set<Socket>();
  const server = createServer((inbound) => {
    open.add(inbound);
    inbound.once('close', () => open.delete(inbound));
    handleConnect(
      inbound,
      (head) => admitClusterConnect(head, opts.key, opts.allowOf),
      // The refusal names a host:port the agent asked for (clipped), never the credential.
      (why) => opts.log.info({ refused: why }, 'sandbox proxy refused a connection'),
    );
  });
  await new Promise<void>((ready, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => ready());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        for (const socket of open) socket.destroy(); // a tunnel would hold the close forever
      }),
  };
}
