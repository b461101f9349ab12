// The Pod of one episode. Its name is a pure function of (task, episode number), so creating it twice is
// harmless (AlreadyExists) and a restarted controller finds, and adopts, the pod it created before.
import { PROXY_VARIABLES } from './proxy-env.ts';
import type { AgentTaskSpec } from '../../api/agent-task.ts';
import { API_VERSION, KIND } from '../../api/agent-task.ts';
import { EPISODE_CONFIG_ENV, EPISODE_PROMPT_ENV, POD_HOME, POD_WORKSPACE } from '../../api/episode-config.ts';
import { TERMINATION_LOG } from '../../api/episode-config.ts';
import type { EpisodeConfig } from '../../api/episode-config.ts';
import { stepEnv, stepGates } from '../../api/steps.ts';
import type { AgentTaskStatus } from '../../api/agent-task.ts';
import type { SkipWhen } from '../../api/scope.ts';
import { alwaysAllowed } from '../../reconciler/scope.ts';
import { renderPromptNoting } from '../prompt.ts';
import { outputsNote } from '../../api/outputs.ts';
import type { OutputScope } from '../../api/outputs.ts';
import { episodeImage } from '../../kube/episode-defaults.ts';
import type { EpisodeDefaults } from '../../kube/episode-defaults.ts';
import type { Container, EnvFromSource, EnvVar, ObjectMeta, PodSpec, Volume } from '../../kube/objects.ts';
import { EPISODE_LABEL, MANAGED_BY_LABEL, RESOLUTION_LABEL, TASK_LABEL, episodePodName } from '../../kube/names.ts';
import type { Frame } from '../../api/ops.ts';
import { EPISODE_PROMPT_VARS_ENV, podPromptVars } from '../../api/prompt-vars.ts';
import { stackPromptTemplate, stackVars } from '../../reconciler/stack.ts';
import { PROVIDER_KEY_VARS } from '../../gateway/agent-env.ts';
import { GATEWAY_TOKEN_ANNOTATION } from './gateway-binding.ts';
import { gitWorkspaceOf } from '../../api/git-workspace.ts';

export const AGENT_CONTAINER = 'agent';
/** The non-root user of episode pods (the "nonroot" uid of distroless images). */
const EPISODE_UID = 65532;
const HOME_DIR = POD_HOME;

const HARDENED_POD_SECURITY = {
  runAsNonRoot: true,
  runAsUser: EPISODE_UID,
  runAsGroup: EPISODE_UID,
  fsGroup: EPISODE_UID,
  seccompProfile: { type: 'RuntimeDefault' },
};
const HARDENED_CONTAINER_SECURITY = {
  runAsNonRoot: true,
  runAsUser: EPISODE_UID,
  runAsGroup: EPISODE_UID,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
};

/** The pod an episode runs in, as sent to the API server: its spec is always set. */
export interface EpisodePod {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: ObjectMeta;
  spec: PodSpec;
}

export interface EpisodePodInput {
  /** The AgentTask's identity: the pod is named after it and owned by it. */
  task: { metadata: { name: string; namespace: string; uid?: string } };
  /** The validated spec (defaults applied); in a pipeline, the current step's (effectiveSpec). */
  spec: AgentTaskSpec;
  episode: number;
  /** spec.steps: the step the episode runs in (currentStep). */
  step?: { name: string; index: number };
  /** Message of the previous episode, for {{lastEpisode.message}}. */
  lastEpisodeMessage?: string;
  /** What the prompt may read of earlier steps' and dependencies' outputs. */
  outputs?: OutputScope;
  /** Placeholders the loop adds (DesiredTask.promptVars: {{children}}, {{messages}}). */
  promptVars?: Readonly<Record<string, string>>;
  /** --episode-defaults: what the task's spec leaves unset. */
  defaults?: EpisodeDefaults;
  /** The step's skipWhen: the runner checks it before the agent starts. */
  skipWhen?: SkipWhen;
  /** The task's status when the episode starts: its step record says whether this is a fix episode. */
  status?: AgentTaskStatus;
  /** Agent ops: the task's stack as it stands (status.stack.frames), and more placeholders ({{bb.KEY}}…). */
  stack?: readonly Frame[];
  more?: Readonly<Record<string, string>>;
  /** spec.agent.credentials: the gateway's URL and the episode's token, and the token's hash (an annotation). */
  gateway?: { env: Readonly<Record<string, string>>; tokenSha256: string };
  /** spec.sandbox.allowHosts: the controller's CONNECT proxy variables (proxy-env.ts), set last. */
  proxyEnv?: ReadonlyArray<{ name: string; value: string }>;
  /** A merge queue's resolution episode (labelled: the task's own loop leaves it to the queue). */
  resolution?: boolean;
}

/** The step's gates and, in a fix episode, the failed gate for {{gate.name}} and {{gate.output}}. */
function gatesOf(input: EpisodePodInput) {
  const { gates, fixing } = stepGates(input.spec, input.status);
  return { gates, gate: fixing && { name: fixing.name, output: fixing.lastOutput ?? '' } };
}

function buildEpisodeConfig(input: EpisodePodInput): EpisodeConfig {
  const { task, spec, episode, lastEpisodeMessage } = input;
  const git = gitWorkspaceOf(spec.workspace);
  return {
    task: task.metadata.name,
    namespace: task.metadata.namespace,
    episode,
    maxEpisodes: spec.limits.maxEpisodes,
    promptVia: spec.agent.promptVia,
    output: spec.agent.output,
    pricing: spec.agent.pricing,
    completion: spec.completion,
    timeoutSeconds: spec.limits.episodeTimeoutSeconds,
    workspaceDir: POD_WORKSPACE,
    ...(git ? { git } : {}),
    ...(spec.progress.checklist ? { checklist: spec.progress.checklist } : {}),
    ...sandboxMountsConfig(spec),
    // The runner reads and renders promptFile itself: the file lives in the workspace, which only the pod sees.
    ...(spec.promptFile ? { promptFile: spec.promptFile } : {}),
    ...(spec.promptFile && lastEpisodeMessage !== undefined ? { lastEpisodeMessage } : {}),
    ...(input.step ? { step: { name: input.step.name, index: input.step.index } } : {}),
    ...gateConfig(input),
    ...codexGatewayOf(input.gateway?.env),
    ...scopeConfig(spec, input.skipWhen),
    ...(spec.promptFile && input.outputs ? { outputs: input.outputs } : {}),
  };
}

/** A promptFile is rendered in the pod: the ops' placeholders go with it, rendered here and bounded. */
function promptVarsEnv(more: Readonly<Record<string, string>>): EnvVar {
  return { name: EPISODE_PROMPT_VARS_ENV, value: JSON.stringify(podPromptVars(more)) };
}

/** A sandbox's mounts: the runner fails the episode when the image lacks one (never an agent without it). */
function sandboxMountsConfig(spec: AgentTaskSpec): Pick<EpisodeConfig, 'sandboxMounts'> {
  const mounts = spec.sandbox?.enabled ? spec.sandbox.mounts : [];
  return mounts.length > 0 ? { sandboxMounts: mounts.map((m) => m.path) } : {};
}

/** An openai grant names a CODEX_HOME: the runner writes its config.toml there from the gateway's URL. */
function codexGatewayOf(env: Readonly<Record<string, string>> | undefined): Pick<EpisodeConfig, 'codexGateway'> {
  const home = env?.CODEX_HOME;
  const baseUrl = env?.OPENAI_BASE_URL;
  return home && baseUrl ? { codexGateway: { home, baseUrl } } : {};
}

function gateConfig(input: EpisodePodInput): Pick<EpisodeConfig, 'gates' | 'gate'> {
  const { gates, gate } = gatesOf(input);
  return { ...(gates.length > 0 ? { gates } : {}), ...(gate ? { gate } : {}) };
}

export function buildEpisodePod(input: EpisodePodInput): EpisodePod {
  const { task, spec, episode } = input;
  // A copy: pods must not share nested objects with the defaults (or with each other).
  const defaults = structuredClone(input.defaults ?? {});
  const name = task.metadata.name;
  const config = buildEpisodeConfig(input);
  const template = spec.stack ? stackPromptTemplate(input.stack ?? spec.stack) : spec.prompt;
  const rendered =
    template === undefined
      ? undefined
      : renderPromptNoting(template, {
          task: name,
          episode,
          maxEpisodes: spec.limits.maxEpisodes,
          lastEpisodeMessage: input.lastEpisodeMessage,
          step: input.step,
          gate: gatesOf(input).gate,
          outputs: input.outputs,
          more: { ...input.more, ...input.promptVars, ...(spec.stack ? stackVars(input.stack ?? spec.stack) : {}) },
        });
  // The runner reports the references rendered empty with the episode's result.
  const note = rendered && outputsNote([], rendered.unknown);
  if (note) config.outputsNote = note;
  const env: EnvVar[] = [{ name: EPISODE_CONFIG_ENV, value: JSON.stringify(config) }];
  if (rendered) env.push({ name: EPISODE_PROMPT_ENV, value: rendered.prompt });
  if (spec.promptFile) env.push(promptVarsEnv({ ...input.more, ...input.promptVars }));
  for (const [name, value] of Object.entries(stepEnv(input.step))) env.push({ name, value });
  const userEnv = spec.agent.env
    .filter((e) => !behindGateway(input, e))
    .map((e) => stripUndefined({ name: e.name, value: e.value, valueFrom: e.valueFrom }));
  const taskNames = new Set(userEnv.map((e) => e.name));
  const defaultEnv = (defaults.env ?? [])
    .filter((e) => !taskNames.has(e.name) && !behindGateway(input, e, true))
    .map((e) => stripUndefined({ name: e.name, value: e.value, valueFrom: e.valueFrom }));
  if (![...userEnv, ...defaultEnv].some((e) => e.name === 'HOME')) env.push({ name: 'HOME', value: HOME_DIR });
  env.push(...defaultEnv, ...userEnv);
  for (const [key, value] of Object.entries(input.gateway?.env ?? {})) env.push({ name: key, value });
  // The controller's proxy variables win: a task's own HTTPS_PROXY would only bypass its allowHosts.
  const proxy = input.proxyEnv ?? [];
  if (proxy.length > 0) env.splice(0, env.length, ...env.filter((e) => !PROXY_VARIABLES.includes(e.name)), ...proxy);

  const envFrom: EnvFromSource[] = (spec.agent.envFrom ?? []).map((e) => stripUndefined({ ...e }));
  const workspace = workspaceVolume(spec.workspace);
  if (workspace.gitSecret) envFrom.push({ secretRef: { name: workspace.gitSecret } });

  const container: Container = stripUndefined({
    name: AGENT_CONTAINER,
    image: episodeImage(spec, defaults),
    imagePullPolicy: spec.agent.imagePullPolicy ?? defaults.imagePullPolicy,
    command: ['episodic', 'episode', '--', ...spec.agent.command],
    workingDir: POD_WORKSPACE,
    env,
    envFrom: envFrom.length > 0 ? envFrom : undefined,
    resources:
      sandboxResources(spec) ?? passedThrough<Container['resources']>(spec.agent.resources ?? defaults.resources),
    terminationMessagePath: TERMINATION_LOG,
    terminationMessagePolicy: 'File',
    securityContext: {
      ...structuredClone(HARDENED_CONTAINER_SECURITY),
      ...passedThrough<Container['securityContext']>(defaults.securityContext),
    },
    volumeMounts: [
      { name: 'workspace', mountPath: POD_WORKSPACE },
      // A read-only root needs writable scratch space: agents keep state in $HOME and /tmp.
      { name: 'home', mountPath: HOME_DIR },
      { name: 'tmp', mountPath: '/tmp' },
    ],
  });

  // A task's "" opts out of the default service account.
  const serviceAccountName = (spec.agent.serviceAccountName ?? defaults.serviceAccountName) || undefined;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: episodePodName(name, episode),
      namespace: task.metadata.namespace,
      // Our labels last: the controller finds its pods by them, so defaults must not override them.
      labels: {
        ...defaults.podLabels,
        [TASK_LABEL]: name,
        [EPISODE_LABEL]: String(episode),
        [MANAGED_BY_LABEL]: 'episodic',
        ...(input.resolution ? { [RESOLUTION_LABEL]: 'true' } : {}),
      },
      ...podAnnotations(defaults.podAnnotations, input.gateway?.tokenSha256),
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: KIND,
          name,
          // An object the API server returned always has one.
          uid: task.metadata.uid as string,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: stripUndefined({
      restartPolicy: 'Never',
      activeDeadlineSeconds: spec.limits.episodeTimeoutSeconds,
      serviceAccountName,
      // Agents get no API credentials unless a service account is named on purpose.
      automountServiceAccountToken: serviceAccountName ? undefined : false,
      priorityClassName: defaults.priorityClassName,
      // spec.sandbox: gVisor, Kata… when the task or the chart names a RuntimeClass.
      runtimeClassName: spec.sandbox?.enabled
        ? (spec.sandbox.runtimeClassName ?? defaults.sandbox?.runtimeClassName)
        : undefined,
      imagePullSecrets: defaults.imagePullSecrets,
      nodeSelector: defaults.nodeSelector,
      tolerations: passedThrough<PodSpec['tolerations']>(defaults.tolerations),
      affinity: passedThrough<PodSpec['affinity']>(defaults.affinity),
      securityContext: {
        ...structuredClone(HARDENED_POD_SECURITY),
        ...passedThrough<PodSpec['securityContext']>(defaults.podSecurityContext),
      },
      containers: [container],
      volumes: [workspace.volume, { name: 'home', emptyDir: {} }, { name: 'tmp', emptyDir: {} }],
    }),
  };
}

/**
 * Behind the gateway a pod holds no provider key: the task's and the defaults' key variables are dropped (the
 * gateway's token takes their place), and so is every Secret reference of the defaults (episodes.apiKeys).
 */
function behindGateway(input: EpisodePodInput, e: { name: string; valueFrom?: unknown }, isDefault = false): boolean {
  if (!input.gateway) return false;
  if ((PROVIDER_KEY_VARS as readonly string[]).includes(e.name) || e.name in input.gateway.env) return true;
  return isDefault && !!(e.valueFrom as { secretKeyRef?: unknown } | undefined)?.secretKeyRef;
}

function podAnnotations(
  fromDefaults: Readonly<Record<string, string>> | undefined,
  tokenSha256: string | undefined,
): { annotations?: Record<string, string> } {
  const annotations = { ...fromDefaults, ...(tokenSha256 ? { [GATEWAY_TOKEN_ANNOTATION]: tokenSha256 } : {}) };
  return Object.keys(annotations).length > 0 ? { annotations } : {};
}

/** spec.sandbox.resources as the container's requests = limits (pids are the node's podPidsLimit, not a pod's). */
function sandboxResources(spec: AgentTaskSpec): Container['resources'] | undefined {
  const r = spec.sandbox?.enabled ? spec.sandbox.resources : undefined;
  if (!r || (r.memoryMiB === undefined && r.cpu === undefined)) return undefined;
  const bound: Record<string, string> = {};
  if (r.memoryMiB !== undefined) bound.memory = `${r.memoryMiB}Mi`;
  if (r.cpu !== undefined) bound.cpu = `${Math.round(r.cpu * 1000)}m`;
  return { requests: { ...bound }, limits: { ...bound } };
}

/**
 * A Kubernetes field --episode-defaults carries as a plain object (episode-defaults.ts): the API server
 * validates it when the pod is created, so it goes into the pod as it is.
 */
function passedThrough<T>(value: unknown): T {
  return value as T;
}

/**
 * volumeClaim → that PVC; git → an emptyDir the runner clones into (credentials from the secret as env);
 * a plain directory string is a local-mode path that means nothing on a node, so it gets an emptyDir too.
 */
function workspaceVolume(workspace: AgentTaskSpec['workspace']): { volume: Volume; gitSecret?: string } {
  if (workspace && typeof workspace === 'object' && 'volumeClaim' in workspace) {
    return { volume: { name: 'workspace', persistentVolumeClaim: { claimName: workspace.volumeClaim } } };
  }
  const git = gitWorkspaceOf(workspace);
  if (git) {
    return { volume: { name: 'workspace', emptyDir: {} }, gitSecret: git.secretRef?.name };
  }
  return { volume: { name: 'workspace', emptyDir: {} } };
}

function stripUndefined<T extends object>(obj: T): T {
  for (const key of Object.keys(obj) as Array<keyof T>) if (obj[key] === undefined) delete obj[key];
  return obj;
}

/** skipWhen and scope for the runner: the step's skipWhen, the episode's scope and the paths always allowed. */
function scopeConfig(spec: AgentTaskSpec, skipWhen: SkipWhen | undefined): Partial<EpisodeConfig> {
  return {
    ...(skipWhen ? { skipWhen } : {}),
    ...(spec.scope ? { scope: spec.scope, scopeAllowed: alwaysAllowed(spec) } : {}),
  };
}
