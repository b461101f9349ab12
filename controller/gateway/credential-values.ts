// Where a credential's value comes from: the controller's environment locally (credentials[].env), a Secret
// the controller reads itself on a cluster (credentials[].secretRef). One small interface, so choosing which
// credential of a pool to use stays apart from how its value is read. A value is never logged or stored.
import type { Credential } from '../api/agent-credentials.ts';
import { isStatus } from '../kube/kube-client.ts';
import type { KubeClient } from '../kube/kube-client.ts';

export type ValueLookup = { ok: true; value: string } | { ok: false; message: string };

export interface CredentialValues {
  /** The value of `credential` of the AgentCredentials in `namespace`; `field` names it in a failure. */
  valueOf(namespace: string, credential: Credential, field: string): Promise<ValueLookup>;
}

/** Locally: the controller's environment variable the credential names (an empty one counts as unset). */
export function envCredentialValue(credential: Credential, env: NodeJS.ProcessEnv): string | undefined {
  const value = credential.env ? env[credential.env] : undefined;
  return value ? value : undefined;
}

/** Secrets the controller may read (RBAC get) hold keys as base64 under data, never anywhere else. */
interface SecretObject {
  data?: Record<string, string>;
}

/** On a cluster: the Secret (in the AgentCredentials' namespace) and key the credential names, read on each use. */
export class SecretCredentialValues implements CredentialValues {
  private readonly client: KubeClient;

  constructor(client: KubeClient) {
    this.client = client;
  }

  async valueOf(namespace: string, credential: Credential, field: string): Promise<ValueLookup> {
    const ref = credential.secretRef;
    if (!ref) return { ok: false, message: `${field}: on a cluster a credential names a Secret (secretRef), not env` };
    const where = `${field}.secretRef: Secret ${namespace}/${ref.name}`;
    let secret: SecretObject;
    try {
      secret = await this.client.get<SecretObject>(
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(ref.name)}`,
      );
    } catch (err) {
      if (isStatus(err, 404)) return { ok: false, message: `${where} does not exist` };
      if (isStatus(err, 403))
        return {
          ok: false,
          message: `${where}: the controller may not read it (chart: gateway.enabled grants get on Secrets in gateway.secretNamespaces)`,
        };
      throw err; // unreachable or slow: worth retrying
    }
    const encoded = secret.data?.[ref.key];
    const value = encoded === undefined ? '' : Buffer.from(encoded, 'base64').toString('utf8').trim();
    if (!value) return { ok: false, message: `${where} has no key "${ref.key}" (or it is empty)` };
    return { ok: true, value };
  }
}
