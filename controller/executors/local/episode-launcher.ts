// Turns a StartEpisode action into a running process: workspace, prompt, env, log file.
// Anything that stops the episode from starting becomes an EpisodeResult, never an exception.
import { episodeLogPath, promptScratchPath } from '../../util/state-layout.ts';
import { agentBaseEnv } from '../../api/agent-env.ts';
import type { AgentTaskSpec, AgentTaskStatus } from '../../api/agent-task.ts';
import { currentStep, stepEnv, stepField, stepGates } from '../../api/steps.ts';
import { episodeResult } from '../../api/episode-result.ts';
import type { EpisodeResult, ErrorClass } from '../../api/episode-result.ts';
import type { StopReason } from '../../reconciler/reconcile.ts';
import type { SkipWhen } from '../../api/scope.ts';
import { checkSkipWhen } from '../evidence/scope-guard.ts';
import { analyzerOptions } from '../output/analyzer-options.ts';
import { checklistRule } from '../process/episode-request.ts';
import { startProcessEpisode } from '../process/process-episode.ts';
import { renderPromptNoting } from '../prompt.ts';
import { outputScope, outputsNote, withPromptNote } from '../../api/outputs.ts';
import type { Outputs } from '../../api/outputs.ts';
import { GitWorkspaceError, prepareLocalGitWorkspace } from './git-workspace.ts';
import { prepareWorkspace, readPromptTemplate, WorkspaceError } from './workspace.ts';
import { opsPromptVars } from '../../ops/local-prompt.ts';
import { stackPromptTemplate } from '../../reconciler/stack.ts';
import { prepareSandbox, warmSandbox } from '../sandbox/episode-sandbox.ts';
import type { Sandbox } from '../../api/sandbox.ts';
import type { EpisodeSandbox } from '../sandbox/episode-sandbox.ts';
import { gitWorkspaceOf } from '../../api/git-workspace.ts';

export interface LaunchRequest {
  root: string;
  stateDir: string;
  specFile: string;
  /** A task the system created: its default workspace is under stateDir (workspace.ts localWorkspace). */
  created?: boolean;
  namespace: string;
  name: string;
  number: number;
  /** The spec the episode runs with: in a pipeline, its step's (effectiveSpec). */
  spec: AgentTaskSpec;
  status: AgentTaskStatus;
  /** Placeholders the loop adds (DesiredTask.promptVars). */
  promptVars?: Readonly<Record<string, string>>;
  killGraceMs?: number;
  /** See ProcessEpisodeRequest.marker. */
  marker?: string;
  /** The step's skipWhen: checked once the workspace exists; when it holds no agent starts (README "skipWhen"). */
  skipWhen?: SkipWhen;
  /** The outputs of the tasks in dependsOn, for {{tasks.NAME.outputs.KEY}}. */
  upstream?: Record<string, Outputs | undefined>;
  /** spec.sandbox: the bubblewrap binary (default /usr/bin/bwrap). */
  bwrap?: string;
  /** spec.agent.credentials: the gateway's token and URL for the agent, or why it cannot have them. */
  gateway?:
    | {
        ok: true;
        env: Record<string, string>;
        unset: string[];
        /** Writes the files naming the gateway (codex's config) from the environment the agent will see. */
        writeAgentFiles?(seen: Readonly<Record<string, string>>): void;
      }
    | { ok: false; message: string };
  /** Runs once the workspace exists, before the agent starts (e.g. a snapshot for evidence). */
  beforeSpawn?: (workspace: string) => Promise<void>;
  /** Variables of the controller's environment specs name as secrets: kept from the agent (api/agent-env.ts). */
  withheldEnv?: ReadonlySet<string>;
  /** A merge queue's resolution episode: in the queue's clone, with its prompt, without the task's gates. */
  resolution?: { cwd: string; template: string; vars: Readonly<Record<string, string>> };
}

/** Set for a resolution episode's agent: it runs in the queue's clone, not the task's workspace. */
export const MERGE_QUEUE_ENV = 'EPISODIC_MERGE_QUEUE';

export interface LaunchedEpisode {
  number: number;
  startedAt: string;
  pid?: number;
  pidStartTime?: string;
  result: Promise<EpisodeResult>;
  cancel(reason: StopReason): void;
  /** The prepared workspace; undefined when it could not be prepared. */
  workspace?: string;
}

export async function launchEpisode(req: LaunchRequest): Promise<LaunchedEpisode> {
  const startedAt = new Date().toISOString();
  const failed = (message: string, errorClass: ErrorClass = 'fatal'): LaunchedEpisode => ({
    number: req.number,
    startedAt,
    // A spec that cannot run (workspace outside the root, missing promptFile) will not fix itself by retrying.
    result: Promise.resolve(episodeResult({ exitCode: null, errorClass, message })),
    cancel: () => undefined,
  });
  if (req.gateway && !req.gateway.ok)
    return failed(`${req.specFile}: AgentTask ${req.namespace}/${req.name}: ${req.gateway.message}`);
  const { env, unset } = agentEnv(req);
  const withheld = new Set([...(req.withheldEnv ?? []), ...unset]);
  // Beside the workspace's set-up (a clone, the snapshot): the first episode finds the task's relay started.
  if (req.spec.sandbox?.enabled) void warmSandbox({ ...sandboxOf(req, req.spec.sandbox), env });
  let workspace: string;
  let template: string;
  try {
    const git = gitWorkspaceOf(req.spec.workspace);
    if (req.resolution) [workspace, template] = [req.resolution.cwd, req.resolution.template];
    else {
      workspace = git
        ? await prepareLocalGitWorkspace(req.stateDir, req.namespace, req.name, req.specFile, git)
        : await prepareWorkspace(req.root, req.specFile, req.name, req.spec, req.created ? req : undefined);
      template = req.spec.stack
        ? stackPromptTemplate(req.status.stack?.frames ?? req.spec.stack)
        : await readPromptTemplate(workspace, req.spec, stepField(currentStep(req.spec, req.status), 'promptFile'));
    }
  } catch (err) {
    if (err instanceof GitWorkspaceError) return failed(err.message, err.errorClass);
    // The same line validate prints: which file, which task, which field.
    if (err instanceof WorkspaceError)
      return failed(`${req.specFile}: AgentTask ${req.namespace}/${req.name}: ${err.message}`);
    return failed(`could not prepare the workspace: ${(err as Error).message}`);
  }
  const skip = checkSkipWhen(workspace, req.skipWhen);
  if (skip)
    return {
      number: req.number,
      startedAt,
      result: Promise.resolve(episodeResult({ exitCode: null, skipped: { reason: 'SkipWhen' }, message: skip })),
      cancel: () => undefined,
    };
  await req.beforeSpawn?.(workspace);
  const { spec } = req;
  const step = currentStep(spec, req.status);
  // A resolution episode answers to the queue's gates, which the queue runs after it.
  const { gates, fixing } = req.resolution ? { gates: [], fixing: undefined } : stepGates(spec, req.status);
  const { prompt, unknown } = renderPromptNoting(template, {
    task: req.name,
    episode: req.number,
    maxEpisodes: spec.limits.maxEpisodes,
    lastEpisodeMessage: req.status.lastEpisode?.message,
    step,
    ...(fixing ? { gate: { name: fixing.name, output: fixing.lastOutput ?? '' } } : {}),
    outputs: outputScope(req.status.steps, req.upstream),
    more: {
      ...opsPromptVars(req.stateDir, req.namespace, req.spec, req.status),
      ...req.promptVars,
      ...req.resolution?.vars,
    },
  });
  const logFile = episodeLogPath(req.stateDir, req.namespace, req.name, req.number);
  let sandbox: EpisodeSandbox | undefined;
  if (spec.sandbox?.enabled) {
    try {
      sandbox = await prepareSandbox({ ...sandboxOf(req, spec.sandbox), env, workspace });
    } catch (err) {
      // Never a run without the sandbox: the task fails to start, saying what to install or enable.
      return failed(`${req.specFile}: AgentTask ${req.namespace}/${req.name}: ${(err as Error).message}`);
    }
  }
  // Codex's config names the gateway as the agent reaches it: the relay's loopback when sandboxed.
  if (req.gateway?.ok) req.gateway.writeAgentFiles?.(sandbox ? sandbox.seen(env) : env);
  const running = await startProcessEpisode({
    sandbox,
    sandboxResources: spec.sandbox?.resources,
    namespace: req.namespace,
    name: req.name,
    episode: req.number,
    maxEpisodes: spec.limits.maxEpisodes,
    argv: spec.agent.command,
    promptVia: spec.agent.promptVia,
    prompt,
    env,
    baseEnv: agentBaseEnv(
      process.env,
      withheld,
      spec.agent.env.map((e) => e.name).filter((n) => !unset.has(n)),
    ),
    cwd: workspace,
    timeoutMs: spec.limits.episodeTimeoutSeconds * 1000,
    killGraceMs: req.killGraceMs,
    logFile,
    promptFile: promptScratchPath(req.stateDir, req.namespace, req.name),
    marker: req.marker,
    verify: req.resolution ? undefined : spec.completion.verify,
    onExitZero: spec.completion.onExitZero,
    analyzer: analyzerOptions(spec.agent, spec.completion),
    gates,
    fixEpisode: fixing !== undefined,
    ...(req.resolution ? {} : checklistRule(spec.progress.checklist, spec.completion)),
  });
  // An agent that never started is the spec's command: say which file, task and field, as validate does.
  const at = `${req.specFile}: AgentTask ${req.namespace}/${req.name}: spec.agent.command`;
  const started =
    running.pid === undefined
      ? running.result.then((r) => (r.errorClass === 'fatal' ? { ...r, message: `${at}: ${r.message}` } : r))
      : running.result;
  const result = started.then((r) => withPromptNote(r, outputsNote([], unknown)));
  return {
    number: req.number,
    startedAt,
    pid: running.pid,
    pidStartTime: running.pidStartTime,
    result,
    cancel: (reason) => running.cancel(reason === 'deleted' ? 'spec deleted' : undefined),
    workspace,
  };
}

/** The agent's variables (spec.agent.env, the step's, the gateway's) and those the gateway keeps from it. */
function agentEnv(req: LaunchRequest): { env: Record<string, string>; unset: Set<string> } {
  const env: Record<string, string> = {};
  for (const e of req.spec.agent.env) {
    if (e.value !== undefined) env[e.name] = e.value;
  }
  Object.assign(env, stepEnv(currentStep(req.spec, req.status)));
  if (req.resolution) env[MERGE_QUEUE_ENV] = '1';
  // After spec.agent.env: behind the gateway the key variables are the gateway's token, never a real key.
  if (req.gateway?.ok) Object.assign(env, req.gateway.env);
  // Behind the gateway the provider keys stay with the controller, even when the spec names them.
  return { env, unset: new Set(req.gateway?.ok ? req.gateway.unset : []) };
}

function sandboxOf(req: LaunchRequest, sandbox: Sandbox) {
  return { sandbox, stateDir: req.stateDir, bwrap: req.bwrap, namespace: req.namespace, name: req.name };
}
