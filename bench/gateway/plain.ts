// bench/gateway's floor: the least a Node relay does, in a process of its own like the gateway. The request
// goes to the same upstream on an undici Agent and the answer is piped back (stream.pipeline) with the
// upstream's status and content type: no token, no metering, no bounds. What it adds over going straight to
// the model server is what any Node relay on this machine pays; the gateway's added latency is compared to it.
// With `tcp`: not even HTTP, each connection piped to one of its own to the upstream (the bytes' floor).
import { createServer } from 'node:http';
import { connect, createServer as createTcpServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { Agent, request } from 'undici';

const upstream = process.argv[2] as string;
const agent = new Agent({ connections: 256 });

const http = createServer(async (req, res) => {
  try {
    const up = await request(`${upstream}${req.url}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: req,
      dispatcher: agent,
    });
    res.writeHead(up.statusCode, { 'content-type': String(up.headers['content-type'] ?? '') });
    await pipeline(up.body, res);
  } catch {
    res.destroy();
  }
});
http.keepAliveTimeout = 60_000;
const tcp = createTcpServer((client) => {
  const { hostname, port } = new URL(upstream);
  const up = connect(Number(port), hostname);
  // No Nagle on either side, as Node's HTTP server and undici set it (else 40 ms delayed-ACK stalls).
  client.setNoDelay(true);
  up.setNoDelay(true);
  client.pipe(up).pipe(client);
  const close = () => {
    client.destroy();
    up.destroy();
  };
  client.on('error', close).on('close', close);
  up.on('error', close).on('close', close);
});
const server: Server = process.argv[3] === 'tcp' ? tcp : http;
server.listen(0, '127.0.0.1', () => {
  process.send?.({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
});
process.on('message', (m) => {
  if (m === 'stats')
    process.send?.({
      stats: { cpu: process.cpuUsage(), rss: process.memoryUsage().rss, maxRss: process.resourceUsage().maxRSS },
    });
});
process.on('disconnect', () => process.exit(0));
