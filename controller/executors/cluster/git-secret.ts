// A task's git Secret (spec.workspace.git.secretRef), read by the controller for the git it does itself
// (best-of-N's adoption, the merge queue), as the runner reads it from envFrom. Tokens never leave here but
// as GitCredentials, which git gets through its credential helper (git/git-credentials.ts).
import { takeGitCredentials } from '../../git/git-credentials.ts';
import type { GitCredentials } from '../../git/git-credentials.ts';
import { isStatus } from '../../kube/kube-client.ts';
import type { KubeClient } from '../../kube/kube-client.ts';

export type Lookup<T> = { ok: true; value: T } | { ok: false; message: string };

/** Missing or forbidden: said in words; unreachable or slow: thrown, worth retrying. */
export async function readGitCredentials(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<Lookup<GitCredentials | undefined>> {
  const where = `spec.workspace.git.secretRef: Secret ${namespace}/${name}`;
  let secret: { data?: Record<string, string> };
  try {
    secret = await client.get(
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`,
      undefined,
      'work',
    );
  } catch (err) {
    if (isStatus(err, 404)) return { ok: false, message: `${where} does not exist` };
    if (isStatus(err, 403))
      return { ok: false, message: `${where}: the controller may not read it (chart: rbac.readSecrets=true)` };
    throw err;
  }
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(secret.data ?? {})) env[key] = Buffer.from(value, 'base64').toString();
  return { ok: true, value: takeGitCredentials(env) };
}
