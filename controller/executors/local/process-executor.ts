// Episodes locally: one process tree per episode, in the task's workspace. Every process of episode N
// carries a marker derived from (state directory, task, N), so the marker is on record the moment
// "episode N starts" is; a restarted controller kills whatever carries the marker of an episode on record
// and records that episode's end from its log: as it ended if the agent finished, else interrupted.
import { gatewayCredentials } from '../../api/agent-credentials.ts';
import { readFileSync } from 'node:fs';
import type { LiveSpend } from '../../reconciler/spend-cap.ts';
import type { Logger } from 'pino';
import { DEFAULT_SPEC } from '../../api/agent-task.ts';
import type { AgentTaskSpec, AgentTaskStatus } from '../../api/agent-task.ts';
import { effectiveSpec } from '../../api/steps.ts';
import { TerminalError } from '../../core/ports.ts';
import type {
  AdoptWinner,
  EpisodeExecutor,
  RecordedStatus,
  ResolutionRun,
  SpecFileTask,
  UpstreamOutputs,
} from '../../core/ports.ts';
import type { EpisodeResult } from '../../api/episode-result.ts';
import type { AdoptOutcome } from '../../api/attempts.ts';
import { adoptLocalWinner, localAttemptDiffs } from './git-workspace.ts';
import { checkpointLocalEpisode } from './episode-checkpoint.ts';
import type { EndedTask } from './episode-checkpoint.ts';
import { checkpointRecovered } from './recovered-checkpoint.ts';
import { launchEpisode } from './episode-launcher.ts';
import { episodeLogPath, promptScratchPath } from '../../util/state-layout.ts';
import type { LaunchedEpisode, LaunchRequest } from './episode-launcher.ts';
import type { ObservedEpisode, StopReason } from '../../reconciler/reconcile.ts';
import { effectiveSkipWhen } from '../../reconciler/scope.ts';
import { scopeBaseline } from '../evidence/scope-guard.ts';
import type { ScopeBaseline } from '../evidence/scope-guard.ts';
import { snapshotReview } from '../evidence/review.ts';
import type { ReviewSnapshot } from '../evidence/review.ts';
import { snapshotWorkspace } from '../evidence/workspace.ts';
import type { SettledTree, WorkspaceSnapshot } from '../evidence/workspace.ts';
import { analyzerOptions } from '../output/analyzer-options.ts';
import { recoverEpisodeFromLog } from '../process/episode-log-recovery.ts';
import { killMarkedProcesses } from '../process/process-tree.ts';
import { opsFilePath, withOpsFrom } from '../process/ops-file.ts';
import type { EpisodeLeash } from '../../api/episode-leash.ts';
import { episodeLeash } from '../../reconciler/spend-cap.ts';
import type { GrantOpening, LocalGatewayBinding } from './gateway-binding.ts';
import { gitWorkspaceOf } from '../../api/git-workspace.ts';

export interface ProcessExecutorOptions {
  /** The spec directory: workspaces must stay inside it. */
  root: string;
  stateDir: string;
  /** Unique to this state directory (see local-controller.ts): the first part of every marker. */
  stateId: string;
  logger: Logger;
  killGraceMs?: number;
  /** spec.sandbox: the bubblewrap binary (default /usr/bin/bwrap). */
  bwrap?: string;
  /** The model gateway for tasks with spec.agent.credentials (absent: such a task's episode cannot start). */
  gateway?: LocalGatewayBinding;
}

/** After the gateway refused for lack of budget, the agent has this long to end by itself before it is stopped. */
export const REFUSED_GRACE_MS = 1000;

export class ProcessEpisodeExecutor implements EpisodeExecutor<SpecFileTask> {
  private readonly opts: ProcessExecutorOptions;
  private readonly running = new Map<string, LaunchedEpisode>();
  /** Ended episodes whose end is not on record yet. */
  private readonly finished = new Map<string, ObservedEpisode>();
  private listeners: Array<(key: string) => void> = [];
  /** Git workspaces the last checkpoint left clean, by directory: the next snapshot needs no `git status`. */
  private readonly settled = new Map<string, SettledTree>();

  /** Variables specs name as secrets (a trigger's tokenEnv…): no agent inherits them (api/agent-env.ts). */
  private withheldEnv: ReadonlySet<string> = new Set();

  constructor(opts: ProcessExecutorOptions) {
    this.opts = opts;
  }

  withholdEnv(names: ReadonlySet<string>): void {
    this.withheldEnv = names;
  }

  markerFor(namespace: string, name: string, episode: number): string {
    return `${this.opts.stateId}/${namespace}/${name}/${episode}`;
  }

  /**
   * After a restart: kill what the episodes on record left running, then read each one's end from its log
   * (episode-log-recovery.ts): finished there, it is recorded as it ended, with its cost; otherwise it is
   * interrupted, keeping the cost the log shows. `specs` gives each task's analyzer options.
   */
  async recover(records: readonly RecordedStatus[], specs?: ReadonlyMap<string, EndedTask>): Promise<void> {
    const where = { stateDir: this.opts.stateDir, logger: this.opts.logger };
    for (const record of records) {
      const current = record.status.currentEpisode;
      if (!current) continue;
      const killed = await killMarkedProcesses(this.markerFor(record.namespace, record.name, current.number));
      const key = `${record.namespace}/${record.name}`;
      const ran = specs?.get(key);
      const taskSpec = ran?.spec;
      // In a pipeline, the episode ran with its step's agent and completion.
      const spec = taskSpec && effectiveSpec(taskSpec, record.status);
      const completion = spec?.completion ?? DEFAULT_SPEC.completion;
      const logFile = episodeLogPath(this.opts.stateDir, record.namespace, record.name, current.number);
      const recovered = await recoverEpisodeFromLog(logFile, {
        analyzer: {
          ...analyzerOptions(spec?.agent, completion),
          command: spec?.agent.command,
          // An echo of the prompt in the log is no claim (promptVia argument keeps no copy of it).
          prompt: readIfPresent(promptScratchPath(this.opts.stateDir, record.namespace, record.name)),
        },
        verify: completion.verify,
        onExitZero: completion.onExitZero,
      });
      const fields = {
        namespace: record.namespace,
        task: record.name,
        episode: current.number,
        orphanKilled: killed,
        costUSD: recovered.result.costUSD,
      };
      if (recovered.how === 'exited' || recovered.how === 'result') {
        this.opts.logger.warn(
          { ...fields, recoveredFrom: recovered.how === 'exited' ? 'exit note' : 'agent result' },
          'episode ended while no controller ran; its end is read from its log',
        );
      } else {
        this.opts.logger.warn(fields, 'episode interrupted by a controller restart');
      }
      this.finished.set(key, {
        number: current.number,
        state: 'finished',
        startedAt: current.startedAt,
        ...(recovered.finishedAt && recovered.how !== 'no-log' ? { finishedAt: recovered.finishedAt } : {}),
        // The ops the agent wrote before the controller died are applied like any episode's.
        result: await withOpsFrom(
          ran && spec && recovered.how !== 'no-log'
            ? await checkpointRecovered(recovered.result, { ...where, task: ran, spec, number: current.number })
            : recovered.result,
          opsFilePath(logFile),
        ),
      });
    }
  }

  observe(task: SpecFileTask, status: AgentTaskStatus): ObservedEpisode | undefined {
    const ended = this.finished.get(task.key);
    if (ended && status.currentEpisode?.number === ended.number) return ended;
    if (ended) this.finished.delete(task.key); // on record now
    const run = this.running.get(task.key);
    if (run) return { number: run.number, state: 'running', startedAt: run.startedAt };
    // On record, but no process of ours ever ran it (a crash between the record and the spawn).
    if (status.currentEpisode) return { number: status.currentEpisode.number, state: 'gone' };
    return undefined;
  }

  async start(
    task: SpecFileTask,
    number: number,
    status: AgentTaskStatus,
    upstream?: UpstreamOutputs,
    leash?: EpisodeLeash,
  ): Promise<Record<string, unknown>> {
    if (!task.spec) throw new TerminalError(`${task.key} has no valid spec to start`);
    // In a pipeline, the current step's prompt, agent, completion and limits.
    const spec = effectiveSpec(task.spec, status);
    let before: WorkspaceSnapshot | undefined;
    let scoped: ScopeBaseline | undefined;
    let reviewBefore: ReviewSnapshot | undefined;
    const snapshot = { exclude: [this.opts.stateDir] };
    let refusedTimer: NodeJS.Timeout | undefined;
    const grant = gatewayCredentials(spec)
      ? await this.openGrant(task, number, spec, status, leash, () => {
          refusedTimer ??= setTimeout(() => this.running.get(task.key)?.cancel('cancelled'), REFUSED_GRACE_MS);
        })
      : undefined;
    const episode = await launchEpisode({
      ...this.launchBase(task, number, spec, status, grant),
      created: task.created,
      upstream,
      promptVars: task.promptVars,
      skipWhen: effectiveSkipWhen(task.spec, status),
      beforeSpawn: async (workspace) => {
        const settled = this.settled.get(workspace);
        this.settled.delete(workspace); // taken once: a failed episode leaves it unknown
        before = await snapshotWorkspace(workspace, { ...snapshot, settled });
        if (spec.scope) scoped = await scopeBaseline(workspace, snapshot.exclude);
        reviewBefore = snapshotReview(workspace);
      },
    });
    this.running.set(task.key, episode);
    void episode.result.then(async (ended) => {
      clearTimeout(refusedTimer);
      const workspace = episode.workspace;
      let result = grant?.ok ? { ...ended, gateway: grant.close() } : ended;
      if (workspace) {
        const end = { workspace, stateDir: this.opts.stateDir, task, spec, number, logger: this.opts.logger };
        const settled = await checkpointLocalEpisode(result, { ...end, before, scoped, reviewBefore }).catch(
          () => undefined,
        );
        if (settled) result = settled.result;
        if (settled?.settled) this.settled.set(workspace, settled.settled);
      }
      this.running.delete(task.key);
      this.finished.set(task.key, {
        number,
        state: 'finished',
        startedAt: episode.startedAt,
        finishedAt: new Date().toISOString(),
        result,
      });
      this.notify(task.key);
    });
    return { agentPid: episode.pid };
  }

  /** What every episode of the task is launched with, a task's own or a resolution episode. */
  private launchBase(
    task: SpecFileTask,
    number: number,
    spec: AgentTaskSpec,
    status: AgentTaskStatus,
    grant: GrantOpening | undefined,
  ) {
    return {
      gateway: grant,
      root: this.opts.root,
      stateDir: this.opts.stateDir,
      specFile: task.file,
      namespace: task.namespace,
      name: task.name,
      number,
      spec,
      status,
      killGraceMs: this.opts.killGraceMs,
      bwrap: this.opts.bwrap,
      marker: this.markerFor(task.namespace, task.name, number),
      withheldEnv: this.withheldEnv,
    } satisfies Partial<LaunchRequest>;
  }

  /** The gateway's grant for the episode; without a gateway, why the task cannot run. */
  private async openGrant(
    task: SpecFileTask,
    number: number,
    spec: AgentTaskSpec,
    status: AgentTaskStatus,
    leash: EpisodeLeash | undefined,
    onRefused: () => void,
  ): Promise<GrantOpening> {
    const credentials = gatewayCredentials(spec) as string;
    if (!this.opts.gateway)
      return { ok: false, message: 'spec.agent.credentials: this controller runs no model gateway' };
    return this.opts.gateway.open({
      namespace: task.namespace,
      task: task.name,
      episode: number,
      credentials,
      // A retried start has no leash of its own: the task's own caps, from its status.
      leash: leash ?? episodeLeash(status, spec.limits),
      onRefused,
      agentEnv: Object.fromEntries(spec.agent.env.flatMap((e) => (e.value === undefined ? [] : [[e.name, e.value]]))),
    });
  }

  /** spec.integrate: a resolution episode, launched as any episode is (sandbox, gateway, marker, log). */
  async resolve(task: SpecFileTask, run: ResolutionRun): Promise<EpisodeResult> {
    if (!task.spec) throw new TerminalError(`${task.key} has no valid spec for a resolution episode`);
    const spec = effectiveSpec(task.spec, run.status);
    let cancel: (() => void) | undefined;
    const grant = gatewayCredentials(spec)
      ? await this.openGrant(task, run.number, spec, run.status, undefined, () => cancel?.())
      : undefined;
    const episode = await launchEpisode({
      ...this.launchBase(task, run.number, spec, run.status, grant),
      resolution: { cwd: run.cwd, template: run.template, vars: run.vars },
    });
    cancel = () => episode.cancel('cancelled');
    const ended = await episode.result;
    return grant?.ok ? { ...ended, gateway: grant.close() } : ended;
  }

  async killResolution(task: SpecFileTask, number: number): Promise<void> {
    await killMarkedProcesses(this.markerFor(task.namespace, task.name, number));
  }

  /** Best-of-N: the winner's branch becomes the task's, in the task's own clone (STATE/workspaces/NS/NAME). */
  async adoptWinner(task: SpecFileTask, action: AdoptWinner): Promise<AdoptOutcome> {
    const ws = gitWorkspaceOf(task.spec?.workspace);
    if (!ws)
      return {
        winner: action.winner,
        from: action.from,
        ok: false,
        message: 'spec.workspace: attempts need a git workspace',
      };
    const git = { ...ws, ref: action.into };
    const result = await adoptLocalWinner(this.opts.stateDir, task.namespace, task.name, task.file, git, action);
    return { winner: action.winner, from: action.from, ...result };
  }

  async attemptDiffs(task: SpecFileTask, attempts: readonly { number: number; task: string }[]) {
    const git = gitWorkspaceOf(task.spec?.workspace);
    if (!git) return {};
    return localAttemptDiffs(this.opts.stateDir, task.namespace, git, attempts);
  }

  async stop(task: SpecFileTask, number: number, reason: StopReason): Promise<void> {
    const run = this.running.get(task.key);
    if (run?.number === number) run.cancel(reason);
    else this.notify(task.key); // nothing of it runs here: look again, it ends as the reconciler says
  }

  /** Kills every running episode's tree at once, without a pass of the loop (the state disk is full). */
  cancelAll(): void {
    for (const run of this.running.values()) run.cancel('cancelled');
  }

  async tidy(): Promise<void> {}

  async forget(key: string): Promise<void> {
    this.finished.delete(key);
  }

  liveSpend(task: { namespace: string; name: string }): LiveSpend | undefined {
    return this.opts.gateway?.liveSpend(task.namespace, task.name);
  }

  runningCount(): number {
    return this.running.size;
  }

  keys(): Iterable<string> {
    return new Set([...this.running.keys(), ...this.finished.keys()]);
  }

  subscribe(onChange: (key: string) => void): void {
    this.listeners.push(onChange);
  }

  private notify(key: string): void {
    for (const l of this.listeners) l(key);
  }
}

function readIfPresent(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
