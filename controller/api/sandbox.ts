// spec.sandbox (README "Sandbox"): what a sandboxed episode may reach, the same words locally (bubblewrap) and
// on a cluster (pod fields and a NetworkPolicy). A step's sandbox replaces the task's as a whole.
import { posix } from 'node:path';
import { z } from 'zod';

export const SANDBOX_NETWORKS = ['gateway', 'none', 'open'] as const;
export type SandboxNetwork = (typeof SANDBOX_NETWORKS)[number];

/** The default state directory's name (cli/options): a mount naming it would hand the agent every task's state. */
export const STATE_DIR_NAME = '.episodic';
const HOST_PORT = /^(?<host>[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]):(?<port>\d{1,5})$/;

/** Why a mount path cannot be handed to an agent, or undefined. */
export function mountPathProblem(path: string): string | undefined {
  if (!posix.isAbsolute(path)) return 'must be an absolute path';
  if (path.split('/').includes('..')) return 'must not contain ".." (the mount would name another directory)';
  if (/[\x00-\x1f\x7f]/.test(path)) return 'must not contain control characters';
  if (path.split('/').includes(STATE_DIR_NAME)) return `must not be or be inside a state directory (${STATE_DIR_NAME})`;
  if (posix.normalize(path) === '/') return 'must not be / (the whole host)';
  return undefined;
}

/** Why an allowHosts entry is not "host:port", or undefined. */
export function allowHostProblem(entry: string): string | undefined {
  const m = HOST_PORT.exec(entry);
  if (!m?.groups) return 'must be "host:port" (a port is required, e.g. github.com:443)';
  const port = Number(m.groups.port);
  if (port < 1 || port > 65535) return 'port must be 1-65535';
  return undefined;
}

/** Why an allowCIDRs entry is not an IPv4/IPv6 CIDR, or undefined. */
export function cidrProblem(entry: string): string | undefined {
  const [ip, bits, ...rest] = entry.split('/');
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(ip ?? '');
  const max = v4 ? 32 : /^[0-9A-Fa-f:]+$/.test(ip ?? '') && (ip ?? '').includes(':') ? 128 : 0;
  if (rest.length > 0 || bits === undefined || max === 0) return 'must be a CIDR such as 10.0.0.0/8';
  if (v4?.slice(1).some((o) => Number(o) > 255)) return 'must be a CIDR such as 10.0.0.0/8';
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) return `prefix length must be 0-${max}`;
  return undefined;
}

function refined(problem: (v: string) => string | undefined) {
  return z
    .string()
    .min(1)
    .max(1024)
    .superRefine((v, ctx) => {
      const p = problem(v);
      if (p) ctx.addIssue({ code: 'custom', message: p });
    });
}

export const SandboxMountSchema = z.strictObject({
  path: refined(mountPathProblem).describe('absolute host path, mounted at the same path in the sandbox'),
  readOnly: z.boolean().default(true),
});

export const SandboxResourcesSchema = z.strictObject({
  memoryMiB: z
    .number()
    .int()
    .min(16)
    .max(1024 * 1024)
    .optional()
    .describe('memory bound of the episode'),
  cpu: z.number().positive().max(1024).optional().describe('CPUs (1.5 = one and a half)'),
  pids: z.number().int().min(8).max(1_000_000).optional().describe('processes and threads of the episode'),
});

export const SandboxSchema = z
  .strictObject({
    enabled: z.boolean().default(true),
    network: z
      .enum(SANDBOX_NETWORKS)
      .default('gateway')
      .describe('gateway: the model gateway and allowHosts only; none: loopback only; open: the host network'),
    allowHosts: z
      .array(refined(allowHostProblem))
      .max(64)
      .default([])
      .describe('host:port pairs reachable through the CONNECT proxy (HTTPS_PROXY) under network gateway'),
    allowCIDRs: z.array(refined(cidrProblem)).max(64).default([]).describe('cluster: egress the NetworkPolicy admits'),
    mounts: z
      .array(SandboxMountSchema)
      .max(32)
      .default([])
      .describe('host paths the agent sees (read-only by default)'),
    resources: SandboxResourcesSchema.default({}),
    runtimeClassName: z
      .string()
      .min(1)
      .max(253)
      .optional()
      .describe(
        "cluster: the pods' RuntimeClass (gVisor runsc, Kata); default the chart's sandbox.defaultRuntimeClass",
      ),
  })
  .superRefine((box, ctx) => {
    if (box.network !== 'gateway' && box.allowHosts.length > 0)
      ctx.addIssue({
        code: 'custom',
        path: ['allowHosts'],
        message: `only network gateway goes through the proxy that admits allowHosts (network is ${box.network})`,
      });
  })
  .describe(
    'an episode reaches its workspace and the gateway, nothing else (README "Sandbox"); a step\'s replaces the task\'s',
  );

export type Sandbox = z.infer<typeof SandboxSchema>;

/**
 * spec.sandbox.mounts on a cluster (README "Sandbox"): a pod has no host directory to share (hostPath would
 * hand the agent the node), so a mount there is a path of the episode's image, read-only like the rest of its
 * root. A read-write mount has no such meaning: the task is refused, naming the field.
 */
export function podMountsProblem(sandbox: Sandbox | undefined): string | undefined {
  const at = sandbox?.enabled ? sandbox.mounts.findIndex((m) => !m.readOnly) : -1;
  if (!sandbox || at < 0) return undefined;
  return (
    `spec.sandbox.mounts[${at}] (${sandbox.mounts[at].path}): readOnly: false has no meaning on a cluster: a pod ` +
    "has no host directory to share; its mounts are its image's paths, read-only (use spec.workspace.volumeClaim " +
    'for files that must persist)'
  );
}

/** The runner's check of a cluster mount: the first path the image lacks, as the field it came from. */
export function missingPodMount(paths: readonly string[], exists: (path: string) => boolean): string | undefined {
  const at = paths.findIndex((p) => !exists(p));
  if (at < 0) return undefined;
  return (
    `spec.sandbox.mounts[${at}].path: ${paths[at]} is not in the episode's image (on a cluster a mount is a ` +
    "path of the image, read-only; /tmp, $HOME and the workspace are the pod's own volumes)"
  );
}
export type SandboxResources = z.infer<typeof SandboxResourcesSchema>;

/** How spec.sandbox.resources were bounded: cgroup v2 or v1 where writable, else rlimits (cpu unbound). */
export const SANDBOX_ENFORCERS = ['cgroup-v2', 'cgroup-v1', 'rlimit', 'none'] as const;
export const RESOURCE_LIMITS = ['memory', 'pids'] as const;
export type ResourceLimit = (typeof RESOURCE_LIMITS)[number];

/** What the executor says about a sandboxed episode: in its result and its record. */
export const SandboxRunSchema = z.strictObject({
  network: z.enum(SANDBOX_NETWORKS),
  resources: z
    .enum(SANDBOX_ENFORCERS)
    .describe(
      'how resources were bounded: cgroup-v2, cgroup-v1 (a group per episode), rlimit (prlimit: address space; nproc does not bind root; cpu unbound), none',
    ),
  /** A bound the episode hit: its processes were killed and the episode failed (reason ResourceLimit). */
  limitHit: z.enum(RESOURCE_LIMITS).optional(),
});
export type SandboxRun = z.infer<typeof SandboxRunSchema>;
