// An AgentCredentials document of the spec directory (spec-files.ts reads the file): validated like the
// other kinds, its errors naming file, object and field. Locally a credential names an environment variable
// of the controller's (credentials[].env); the value is read when an episode starts, never stored.
import { taskKey } from '../../api/agent-task.ts';
import { CREDENTIALS_KIND, credentialsNameProblem, validateCredentialsSpec } from '../../api/agent-credentials.ts';
import type { AgentCredentialsSpec } from '../../api/agent-credentials.ts';
import type { NamespaceCredentials } from '../../reconciler/credentials-choice.ts';

export interface SpecCredentials {
  key: string;
  namespace: string;
  name: string;
  file: string;
  spec?: AgentCredentialsSpec;
  /** spec.default as written, an invalid document's too: a task relying on it fails to start, never goes keyless. */
  isDefault?: boolean;
  errors: string[];
  specHash: string;
}

export function credentialsDocument(
  meta: { namespace: string; name: string },
  manifest: Record<string, unknown>,
  where: string,
  file: string,
  specHash: string,
): SpecCredentials {
  const spec = validateCredentialsSpec(manifest.spec);
  const label = `${where}: ${CREDENTIALS_KIND} ${meta.namespace}/${meta.name}`;
  const errors = spec.ok ? [] : spec.errors.map((e) => `${label}: ${e}`);
  const reserved = credentialsNameProblem(meta.name);
  if (reserved) errors.push(`${label}: ${reserved}`);
  // Local mode reads a key from the controller's environment: a secretRef is the cluster's.
  if (spec.ok)
    spec.spec.credentials.forEach((c, i) => {
      if (c.env === undefined)
        errors.push(
          `${label}: spec.credentials[${i}].env: locally a credential names an environment variable (secretRef is for a cluster)`,
        );
    });
  return {
    key: taskKey(meta.namespace, meta.name),
    namespace: meta.namespace,
    name: meta.name,
    file,
    spec: spec.ok && errors.length === 0 ? spec.spec : undefined,
    isDefault: (manifest.spec as { default?: unknown } | undefined)?.default === true,
    errors,
    specHash,
  };
}

/** The namespace's AgentCredentials documents, as the credentials choice reads them (file and object named). */
export function namespaceCredentials(all: Iterable<SpecCredentials>, namespace: string): NamespaceCredentials[] {
  return [...all]
    .filter((c) => c.namespace === namespace)
    .map((c) => ({ name: c.name, isDefault: c.isDefault === true, where: `${c.file} (${CREDENTIALS_KIND} ${c.key})` }));
}
