// A TCP proxy to the API server for watch-recovery tests: it can reset every open connection (errors) or
// stop forwarding on the open ones while keeping them open (a silently dead connection).
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import type { Cluster } from './cluster.ts';

export /** A TCP proxy to the API server whose open connections can be reset or frozen. */
class ChaosProxy {
  private readonly server: net.Server;
  private readonly pairs = new Set<{ client: net.Socket; upstream: net.Socket; frozen: boolean }>();
  port = 0;

  constructor(target: { host: string; port: number }) {
    this.server = net.createServer((client) => {
      const upstream = net.connect(target.port, target.host);
      const pair = { client, upstream, frozen: false };
      this.pairs.add(pair);
      // Forward by hand so a frozen pair drops bytes instead of buffering them.
      client.on('data', (d) => pair.frozen || upstream.write(d));
      upstream.on('data', (d) => pair.frozen || client.write(d));
      const close = () => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('close', close).on('error', close);
      upstream.on('close', close).on('error', close);
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  /** Reset every open connection (RST), like an API server restart or a load balancer failover. */
  reset(): number {
    const n = this.pairs.size;
    for (const { client, upstream } of this.pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    return n;
  }

  /** Open connections stay open but carry nothing any more (a dead NAT entry). New ones work. */
  freeze(): number {
    for (const pair of this.pairs) pair.frozen = true;
    return this.pairs.size;
  }

  close(): void {
    this.reset();
    this.server.close();
  }
}

/** A listening ChaosProxy in front of the cluster's apiserver, and a kubeconfig that talks through it. */
export async function proxiedKubeConfig(cluster: Cluster): Promise<{ proxy: ChaosProxy; kubeConfig: KubeConfig }> {
  const server = new URL(cluster.server);
  const proxy = new ChaosProxy({ host: server.hostname, port: Number(server.port) });
  await proxy.listen();
  const text = await readFile(cluster.kubeconfigPath, 'utf8');
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(text.replace(cluster.server, `https://127.0.0.1:${proxy.port}`));
  return { proxy, kubeConfig };
}
