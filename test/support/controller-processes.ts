// For a describe() whose tests run the controller as a process (a kill -9, its log lines): a fresh namespace,
// a client, a fake kubelet, and start() for controller processes watching that namespace, all killed after.
import { after, before } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import type { Cluster } from './cluster.ts';
import { clusterWithCrd, createNamespace, FakeKubelet, startControllerProcess, testClient } from './kubelet.ts';
import type { ControllerProcess } from './kubelet.ts';

export interface ProcessFixture {
  cluster: Cluster;
  ns: string;
  client: KubeClient;
  kubelet: FakeKubelet;
  /** A controller process for the namespace (more arguments after `--namespace NS`). */
  start(args?: string[]): Promise<ControllerProcess>;
}

export function withControllerProcesses(nsPrefix: string, bind: (f: ProcessFixture) => void): void {
  const running: ControllerProcess[] = [];
  let client: KubeClient | undefined;
  before(
    async () => {
      const cluster = await clusterWithCrd();
      const ns = await createNamespace(nsPrefix);
      client = await testClient(cluster);
      const start = async (args: string[] = []) => {
        const p = await startControllerProcess(cluster, ['--namespace', ns, ...args]);
        running.push(p);
        return p;
      };
      bind({ cluster, ns, client, kubelet: new FakeKubelet(client), start });
    },
    { timeout: 90 * 60_000 },
  );
  after(async () => {
    await Promise.all(running.map((p) => p.kill()));
    client?.close();
  });
}
