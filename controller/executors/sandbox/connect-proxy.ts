// The CONNECT proxy carried out, for both modes: reads a request head, asks the rule (connect-rule.ts) and
// either refuses with its status or connects and splices. Locally it serves the sandbox's Unix socket
// (gateway-bridge.ts); on a cluster a TCP port of the controller (cluster/sandbox-proxy.ts).
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { REQUEST_HEAD_MAX } from './connect-rule.ts';
import type { ConnectVerdict } from './connect-rule.ts';

const REASONS = { 403: 'Forbidden', 407: 'Proxy Authentication Required' } as const;

/** One inbound connection: `decide` sees the head up to its blank line; a refusal goes to `onRefused`. */
export function handleConnect(
  inbound: Socket,
  decide: (head: string) => ConnectVerdict,
  onRefused: (why: string) => void,
): void {
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0 && head.length < REQUEST_HEAD_MAX) return;
    inbound.off('data', onData);
    const verdict: ConnectVerdict =
      end < 0 ? { refused: 'request head too long', status: 403 } : decide(head.subarray(0, end).toString('latin1'));
    if ('refused' in verdict) {
      onRefused(verdict.refused);
      const challenge = verdict.status === 407 ? 'Proxy-Authenticate: Basic realm="episodic"\r\n' : '';
      inbound.end(
        `HTTP/1.1 ${verdict.status} ${REASONS[verdict.status]}\r\n${challenge}Content-Type: text/plain\r\n\r\n` +
          `episodic sandbox: ${verdict.refused}\n`,
      );
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

/** Bytes both ways until either side ends. */
export function splice(a: Socket, b: Socket): void {
  a.pipe(b).pipe(a);
  const end = () => {
    a.destroy();
    b.destroy();
  };
  a.on('error', end).on('close', end);
  b.on('error', end).on('close', end);
}
