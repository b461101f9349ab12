// The contract between the cluster controller and the episode runner inside an episode pod
// (`episodic episode -- <agent argv>`). The controller puts this JSON in the EPISODIC_EPISODE_CONFIG
// environment variable; the runner answers with a compact EpisodeResult in the termination message.
import { z } from 'zod';
import { AgentSchema, CompletionSchema, GitWorkspaceSchema } from './agent-task.ts';
import { ScopeSchema, SkipWhenSchema } from './scope.ts';

export const EPISODE_CONFIG_ENV = 'EPISODIC_EPISODE_CONFIG';
/** The rendered prompt travels separately: it can be long and it is not configuration. */
export const EPISODE_PROMPT_ENV = 'EPISODIC_PROMPT';
export const TERMINATION_LOG = '/dev/termination-log';
/** Kubernetes truncates termination messages at 4096 bytes; stay below it. */
export const TERMINATION_MESSAGE_LIMIT = 4096;
export const POD_WORKSPACE = '/workspace';
/** The pod's $HOME: an emptyDir, since a read-only root needs writable scratch space for agents' state. */
export const POD_HOME = '/home/episodic';
/** An openai task's CODEX_HOME behind the gateway: in the home emptyDir, so codex can write its own state there. */
export const POD_CODEX_HOME = `${POD_HOME}/.codex`;

// The runner's copy of a gate: the task's CRD already validated it, so only its shape is checked here.
export const GateConfigSchema = z.object({
  name: z.string(),
  fix: z.array(z.string()).optional(),
  check: z.array(z.string()).min(1),
  maxFixEpisodes: z.number().int(),
  timeoutSeconds: z.number().int().min(1),
});

// Outputs (api/outputs.ts): what a promptFile may read, and what the controller's rendering left unknown.
const outputsByName = z.record(z.string(), z.record(z.string(), z.string()).optional());
const OUTPUTS_CONFIG_FIELDS = {
  /** For {{steps.NAME.outputs.KEY}} and {{tasks.NAME.outputs.KEY}} when the runner renders a promptFile. */
  outputs: z.object({ steps: outputsByName.optional(), tasks: outputsByName.optional() }).optional(),
  /** Output references the controller rendered empty in the prompt: the runner puts them in the result. */
  outputsNote: z.string().optional(),
};

export const EpisodeConfigSchema = z.object({
  task: z.string(),
  namespace: z.string(),
  episode: z.number().int().min(1),
  maxEpisodes: z.number().int().min(1),
  promptVia: AgentSchema.shape.promptVia,
  output: AgentSchema.shape.output,
  pricing: AgentSchema.shape.pricing,
  completion: CompletionSchema,
  timeoutSeconds: z.number().int().min(1),
  workspaceDir: z.string().default(POD_WORKSPACE),
  /** spec.promptFile: the runner reads and renders it, since only the pod sees the workspace. */
  promptFile: z.string().min(1).optional(),
  /** For {{lastEpisode.message}} when the runner renders a promptFile. */
  lastEpisodeMessage: z.string().optional(),
  /** spec.steps: the step the episode runs in, for {{step.name}} and {{step.index}} in a promptFile. */
  step: z.object({ name: z.string(), index: z.number().int().min(1) }).optional(),
  /** spec.progress.checklist: the plan file the runner counts for evidence. */
  checklist: z.string().min(1).optional(),
  /** spec.steps[].gates of the episode's step, run by the runner in the pod after the agent. */
  gates: z.array(GateConfigSchema).optional(),
  /** A fix episode: the failed gate, for {{gate.name}}/{{gate.output}} in a promptFile; gates run after any clean exit. */
  gate: z.object({ name: z.string(), output: z.string() }).optional(),
  // skipWhen and scope (api/scope.ts): the runner checks them, since only the pod sees the workspace.
  skipWhen: SkipWhenSchema.optional(),
  scope: ScopeSchema.optional(),
  /** Paths always in scope (the plan file, DISCOVERY.md, IDEAS.md, the outputs file). */
  scopeAllowed: z.array(z.string()).optional(),
  /** spec.sandbox.mounts: paths of the image the agent is promised (read-only); the runner checks they exist. */
  sandboxMounts: z.array(z.string()).optional(),
  /** Behind the gateway, an openai task: the runner writes home/config.toml naming the gateway (a URL, no key). */
  codexGateway: z.object({ home: z.string().min(1), baseUrl: z.string().min(1) }).optional(),
  /** Set for git workspaces: clone before the episode, commit and push after it. */
  git: GitWorkspaceSchema.shape.git.optional(),
  ...OUTPUTS_CONFIG_FIELDS,
});

export type EpisodeConfig = z.infer<typeof EpisodeConfigSchema>;
