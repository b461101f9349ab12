// The log endpoint of a kubelet, for the cluster tests: the test control plane has no kubelet, but its
// apiserver proxies `GET pods/NAME/log` to the node the pod is bound to, at the node's InternalIP and
// status.daemonEndpoints.kubeletEndpoint.Port, over HTTPS (it does not check the kubelet's certificate
// unless --kubelet-certificate-authority is set, and scripts/cluster/up.sh does not set it). So a Node object
// pointing at 127.0.0.1 and this server, and pods bound to that node, give the real pod log API: the
// apiserver's own path, query checks and streaming, with the runner's real output as the container log.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { AGENT_CONTAINER } from '../../controller/executors/cluster/episode-pod.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { clusterDir } from './cluster.ts';
import { type FakeKubelet, type RunOptions, type RunOutcome, runRunner } from './kubelet.ts';
import type { LooseObject as KubeObject } from './loose-object.ts';

interface ContainerLog {
  text: string;
  ended: boolean;
  followers: Set<{ res: ServerResponse; budget: number }>;
}

export class KubeletLogs {
  readonly nodeName: string;
  /** Every request the apiserver sent here (path and query), for tests that check what was asked. */
  readonly requests: string[] = [];
  private readonly client: KubeClient;
  private readonly server: Server;
  private readonly logs = new Map<string, ContainerLog>();

  private constructor(client: KubeClient, server: Server, nodeName: string) {
    this.client = client;
    this.server = server;
    this.nodeName = nodeName;
  }

  /** Serves on a loopback port and registers a Node that points there. */
  static async start(client: KubeClient): Promise<KubeletLogs> {
    // Any certificate for 127.0.0.1 will do: the apiserver's own serving one is at hand.
    const pki = path.join(clusterDir, 'pki', 'serving');
    const [cert, key] = await Promise.all([
      readFile(path.join(pki, 'apiserver.crt')),
      readFile(path.join(pki, 'apiserver.key')),
    ]);
    let self: KubeletLogs | undefined;
    const server = createServer({ cert, key }, (req, res) => self?.serve(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new KubeletLogs(client, server, `episodic-test-node-${randomBytes(4).toString('hex')}`);
    await client.create('/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: self.nodeName } });
    await client.mergePatch(`/api/v1/nodes/${self.nodeName}/status`, {
      status: {
        addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
        daemonEndpoints: { kubeletEndpoint: { Port: (server.address() as AddressInfo).port } },
      },
    });
    return self;
  }

  /** What kube-scheduler does: the binding subresource sets the pod's spec.nodeName to this node. */
  async bind(pod: KubeObject): Promise<KubeObject> {
    const { namespace, name } = pod.metadata;
    await this.client.create(`/api/v1/namespaces/${namespace}/pods/${name}/binding`, {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name, namespace },
      target: { apiVersion: 'v1', kind: 'Node', name: this.nodeName },
    });
    return this.client.get(`/api/v1/namespaces/${namespace}/pods/${name}`);
  }

  /** The container printed `text`: kept, and sent to every open follow. */
  append(pod: KubeObject, text: string): void {
    const log = this.logOf(pod);
    log.text += text;
    for (const f of log.followers) this.write(f, log, text);
  }

  /** The container exited: follows end, as the kubelet ends them. */
  end(pod: KubeObject): void {
    const log = this.logOf(pod);
    log.ended = true;
    for (const f of log.followers) f.res.end();
    log.followers.clear();
  }

  /** How many follows of the pod's log are open: the apiserver holds one per reader. */
  following(pod: KubeObject): number {
    return this.logOf(pod).followers.size;
  }

  /** Bound, running, the real runner's output as the container log, then terminated with its result. */
  async runEpisode(kubelet: FakeKubelet, pod: KubeObject, opts: RunOptions = {}): Promise<RunOutcome> {
    const running = await kubelet.setRunning(await this.bind(pod));
    const outcome = await runRunner(running, { ...opts, output: (chunk) => this.append(pod, chunk) });
    this.end(pod);
    await kubelet.terminate(running, { exitCode: outcome.exitCode, message: outcome.message });
    return outcome;
  }

  async close(): Promise<void> {
    for (const log of this.logs.values()) for (const f of log.followers) f.res.end();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.client.delete(`/api/v1/nodes/${this.nodeName}`).catch(() => undefined);
  }

  private logOf(pod: KubeObject, container = AGENT_CONTAINER): ContainerLog {
    const key = `${pod.metadata.namespace}/${pod.metadata.name}/${container}`;
    let log = this.logs.get(key);
    if (!log) this.logs.set(key, (log = { text: '', ended: false, followers: new Set() }));
    return log;
  }

  /** GET /containerLogs/NAMESPACE/POD/CONTAINER?follow&tailLines&limitBytes, as the kubelet serves it. */
  private serve(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'https://kubelet');
    this.requests.push(`${url.pathname}${url.search}`);
    const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    const log = m && this.logs.get(`${m[1]}/${m[2]}/${m[3]}`);
    if (req.method !== 'GET' || !log) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('container not found\n');
      return;
    }
    const q = url.searchParams;
    const limit = q.has('limitBytes') ? Number(q.get('limitBytes')) : Number.POSITIVE_INFINITY;
    const follower = { res, budget: limit };
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    this.write(follower, log, tail(log.text, q.get('tailLines')));
    if (log.ended || q.get('follow') !== 'true' || follower.budget <= 0) {
      res.end();
      return;
    }
    log.followers.add(follower);
    req.once('close', () => log.followers.delete(follower));
  }

  /** Writes within the request's limitBytes; past it the stream ends, as the kubelet's does. */
  private write(f: { res: ServerResponse; budget: number }, log: ContainerLog, text: string): void {
    const bytes = Buffer.from(text);
    f.res.write(bytes.subarray(0, Math.max(0, f.budget)));
    f.budget -= bytes.length;
    if (f.budget <= 0) {
      log.followers.delete(f);
      f.res.end();
    }
  }
}

/** The last n lines (a final line without its newline counts), or all of it without tailLines. */
function tail(text: string, tailLines: string | null): string {
  if (tailLines === null) return text;
  const lines = text.split(/(?<=\n)/).filter((l) => l !== '');
  return lines.slice(Math.max(0, lines.length - Number(tailLines))).join('');
}
