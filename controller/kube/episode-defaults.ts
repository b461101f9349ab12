// `episodic controller --episode-defaults FILE`: cluster-wide defaults for episode pods (the Helm chart
// renders this file from `episodes.*` values into a ConfigMap). A task's own spec always wins; the pod-level
// fields a task cannot set (nodeSelector, tolerations, ...) come from here only.
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { AgentSchema, EnvVarSchema } from '../api/agent-task.ts';
import type { AgentTaskSpec } from '../api/agent-task.ts';
import { stepSpec } from '../api/steps.ts';
import { formatIssuePath, validateSpec } from '../api/validate.ts';

// Kubernetes objects we pass through untouched: the API server validates them when the pod is created.
const k8sObject = z.record(z.string(), z.unknown());
const stringMap = z.record(z.string(), z.string());
// Helm renders `cpu: 1` as a number; Kubernetes quantities accept both.
const quantities = z.record(z.string(), z.union([z.string(), z.number()]));

// Strict: a misspelt key would otherwise be ignored silently and the pods would lack what it meant to set.
export const EpisodeDefaultsSchema = z.strictObject({
  image: z.string().min(1).optional(),
  imagePullPolicy: AgentSchema.shape.imagePullPolicy,
  imagePullSecrets: z.array(z.strictObject({ name: z.string().min(1) })).optional(),
  serviceAccountName: z.string().min(1).optional(),
  priorityClassName: z.string().min(1).optional(),
  nodeSelector: stringMap.optional(),
  tolerations: z.array(k8sObject).optional(),
  affinity: k8sObject.optional(),
  resources: z
    .strictObject({
      requests: quantities.optional(),
      limits: quantities.optional(),
      claims: z.array(k8sObject).optional(),
    })
    .optional(),
  /** Layered key by key over the controller's hardened pod securityContext. */
  podSecurityContext: k8sObject.optional(),
  /** Layered key by key over the controller's hardened container securityContext. */
  securityContext: k8sObject.optional(),
  podLabels: stringMap.optional(),
  podAnnotations: stringMap.optional(),
  /** Added to every episode pod unless the task sets a variable of the same name (API keys as secretKeyRef). */
  env: z.array(EnvVarSchema).optional(),
  /** spec.sandbox on a cluster (the chart's sandbox.*): see executors/cluster/network-policy.ts. */
  sandbox: z
    .strictObject({
      /** runtimeClassName of sandboxed tasks' pods that name none. */
      runtimeClassName: z.string().min(1).optional(),
      /** Refuse tasks without spec.sandbox.enabled. */
      enforce: z.boolean().optional(),
      /** The model gateway's pods, the one egress a sandboxed pod has besides DNS and allowCIDRs. */
      gateway: z
        .strictObject({
          namespace: z.string().min(1).optional(),
          podLabels: stringMap,
          port: z.number().int().min(1).max(65535),
        })
        .optional(),
      /** The controller's CONNECT proxy (allowHosts): what pods dial, and the pods the NetworkPolicy admits. */
      proxy: z
        .strictObject({
          host: z.string().min(1).max(253),
          port: z.number().int().min(1).max(65535),
          namespace: z.string().min(1).optional(),
          podLabels: stringMap,
        })
        .optional(),
    })
    .optional(),
});

export type EpisodeDefaults = z.infer<typeof EpisodeDefaultsSchema>;

/** Thrown for a file that cannot be read or does not validate; the message names the file and the field. */
export class EpisodeDefaultsError extends Error {}

/** Parse and validate the text of a defaults file; `file` only names it in errors. */
export function parseEpisodeDefaults(text: string, file: string): EpisodeDefaults {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new EpisodeDefaultsError(`${file}: not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  // An empty file (or a ConfigMap key left blank) means "no defaults".
  const parsed = EpisodeDefaultsSchema.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `${formatIssuePath(issue.path, '')}: ${issue.message}`);
  throw new EpisodeDefaultsError(`${file}: ${problems.join('; ')}`);
}

export async function loadEpisodeDefaults(file: string): Promise<EpisodeDefaults> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new EpisodeDefaultsError(
      `${file}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  return parseEpisodeDefaults(text, file);
}

/** The episode pod's image: the task's own, else the controller's default (undefined: the task cannot run here). */
export function episodeImage(spec: AgentTaskSpec, defaults: EpisodeDefaults | undefined): string | undefined {
  return spec.agent.image ?? defaults?.image;
}

/** validateSpec plus the one rule that only holds on a cluster: an image, from the task or --episode-defaults. */
export function clusterSpec(raw: unknown, defaults?: EpisodeDefaults): { spec?: AgentTaskSpec; specError?: string } {
  const validation = validateSpec(raw);
  if (!validation.ok) return { specError: validation.errors.join('; ') };
  const spec = validation.spec;
  // In a pipeline each step's episodes need one: a step may name its own.
  const specs = spec.steps?.length ? spec.steps.map((_, i) => stepSpec(spec, i + 1)) : [spec];
  if (specs.some((s) => episodeImage(s, defaults) === undefined)) {
    return {
      specError:
        'spec.agent.image: required in cluster mode (an image that contains the episodic runner and the agent), ' +
        'unless the controller has a default image (--episode-defaults)',
    };
  }
  return { spec: validation.spec };
}
