// On a cluster an AgentCredentials' status (its credentials' pauses, totals and last errors; never a value) is
// written through the /status subresource with a merge patch, so a pause outlives the controller; the
// controller never writes its spec. Read once when its pool is made (gateway/credential-pools.ts).
import type { Logger } from 'pino';
import { AgentCredentialsStatusSchema, CREDENTIALS_PLURAL } from '../../api/agent-credentials.ts';
import { GROUP, VERSION } from '../../api/agent-task.ts';
import type { CredentialState } from '../../gateway/credential-pool.ts';
import type { CredentialsStatusStore } from '../../gateway/credential-pools.ts';
import { isStatus } from '../../kube/kube-client.ts';
import type { KubeClient } from '../../kube/kube-client.ts';

export const credentialsPath = (namespace: string, name: string, subresource = '') =>
  `/apis/${GROUP}/${VERSION}/namespaces/${encodeURIComponent(namespace)}/${CREDENTIALS_PLURAL}/${encodeURIComponent(name)}${subresource ? `/${subresource}` : ''}`;

export class KubeCredentialsStatus implements CredentialsStatusStore {
  private readonly client: KubeClient;
  private readonly log: Logger;

  constructor(client: KubeClient, log: Logger) {
    this.client = client;
    this.log = log;
  }

  /** What was kept; nothing when the object has no status (or it does not parse: said in the log). */
  async read(namespace: string, name: string): Promise<CredentialState[]> {
    let object: { status?: unknown };
    try {
      object = await this.client.get<{ status?: unknown }>(credentialsPath(namespace, name));
    } catch (err) {
      if (isStatus(err, 404)) return [];
      throw err;
    }
    const parsed = AgentCredentialsStatusSchema.safeParse(object.status ?? {});
    if (parsed.success) return parsed.data.credentials;
    this.log.warn(
      { credentials: `${namespace}/${name}` },
      'AgentCredentials status does not parse; its pauses start over',
    );
    return [];
  }

  async write(namespace: string, name: string, credentials: readonly CredentialState[], now: Date): Promise<void> {
    const body = { status: { credentials, updatedAt: now.toISOString() } };
    await this.client.mergePatch(credentialsPath(namespace, name, 'status'), body);
  }
}
