// bench/gateway's gateway: the real one (controller/gateway/gateway.ts) in a process of its own, with its
// metrics wired as the executors wire them, one token per response size, its CPU time and RSS reported on
// request over IPC.
import pino from 'pino';
import { Registry } from 'prom-client';
import { startGateway } from '../../controller/gateway/gateway.ts';
import { GatewayMetrics } from '../../controller/metrics/gateway-metrics.ts';

const upstream = process.argv[2] as string;
const metrics = new GatewayMetrics(new Registry());
const gateway = await startGateway({
  host: '127.0.0.1',
  log: pino({ level: 'silent' }),
  onAnswer: (grant, credential, status) => metrics.answered(grant, credential, status),
  onUsage: (grant, usage, cost, _status, credential) => metrics.used(grant, credential, usage, cost),
});
const price = { inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };
const grants = Object.fromEntries(
  ['short', 'big'].map((size) => [
    size,
    {
      url: gateway.baseUrl('default', size),
      token: gateway.grants.issue({
        namespace: 'default',
        task: size,
        episode: 1,
        provider: 'anthropic',
        upstream: `${upstream}/${size}`,
        credentials: [{ name: 'bench', value: 'sk-ant-bench' }],
        pricing: { '*': price },
        leash: { task: { costUSD: 0, tokens: 0 }, others: [] },
      }),
    },
  ]),
);
process.send?.({ grants });
process.on('message', (m) => {
  if (m === 'stats')
    process.send?.({
      stats: { cpu: process.cpuUsage(), rss: process.memoryUsage().rss, maxRss: process.resourceUsage().maxRSS },
    });
});
process.on('disconnect', () => process.exit(0));
