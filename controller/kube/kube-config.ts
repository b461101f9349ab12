// Which kubeconfig a command uses: the --kubeconfig file, else $KUBECONFIG, else in-cluster, else ~/.kube/config.
import type { KubeConfig } from '@kubernetes/client-node';

export async function loadKubeConfig(path: string | undefined): Promise<KubeConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  if (path) kc.loadFromFile(path);
  else if (!process.env.KUBECONFIG && process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc;
}
