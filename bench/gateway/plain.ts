// bench/gateway's floor: the least a Node relay does, in a process of its own like the gateway. The request
// goes to the same upstream on an undici Agent and the answer is piped back (stream.pipeline) with the
// upstream's status and content type: no token, no metering, no bounds. What it adds over going straight to
// the model server is what any Node relay on this machine pays; the gateway's added latency is compared to it.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { Agent, request } from 'undici';

const upstream = process.argv[2] as string;
const agent = new Agent({ connections: 256 });

const server = createServer(async (req, res) => {
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
server.keepAliveTimeout = 60_000;
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
