// The composition of `episodic run`: lock the state dir, load and check the specs, recover what a previous
// controller left, follow the spec files, and run the local controller until it settles or is stopped.
// The CLI parses the arguments, shows the view and turns the end into an exit code.
import { accessSync, constants, existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import type { AgentTriggerStatus } from '../api/agent-trigger.ts';
import type { EpisodicMetrics } from '../metrics/metrics.ts';
import type { RunningServer } from '../metrics/server.ts';
import { checkSpecSet, withoutFailedChecks } from '../sources/local/spec-checks.ts';
import type { LoadedSpecs, SpecTask } from '../sources/local/spec-files.ts';
import { loadSpecDir } from '../sources/local/spec-files.ts';
import type { SpecWatcher } from '../sources/local/spec-watcher.ts';
import { LocalController } from './local-controller.ts';
import { acquireStateLock, StateLockError } from '../util/state-lock.ts';
import type { StateLock } from '../util/state-lock.ts';
import { systemClock } from '../core/clock.ts';
import { envSecret, LocalTriggerStatus, runnableTriggers, TriggerTimers } from '../sources/triggers/local-triggers.ts';
import { TriggerRunner } from '../sources/triggers/trigger-runner.ts';
import type { RunnableTrigger } from '../sources/triggers/trigger-runner.ts';
import type { HookServer } from '../forge/hook-server.ts';
import { PhaseWakes } from '../sources/triggers/phase-wakes.ts';
import { localResumeRequester } from '../sources/triggers/resume-command.ts';

export type LocalView = Array<{ task: SpecTask; status: AgentTaskStatus }>;

export interface LocalRunOptions {
  dir: string;
  stateDir: string;
  watch: boolean;
  maxConcurrent: number;
  budgetUSD?: number;
  logger: Logger;
  metricsAddr?: string;
  /** With watch: serve POST /hooks/NAMESPACE/TRIGGER here (webhook triggers, and wakes for forge polls). */
  hooksAddr?: string;
  /** Prometheus text metrics are written here at the end. */
  metricsFile?: string;
  /** Aborted on SIGINT/SIGTERM (its reason: the signal): start nothing more, stop what runs. */
  interrupt: AbortSignal;
  /** Shows the view while the run goes on (the CLI's live table); stopped once the run ends. */
  show?: (view: () => LocalView, extra: LiveExtra) => { stop(): void };
}

/** What the live table shows beside the tasks: each valid trigger with its recorded status, the hooks' URL. */
export interface LiveExtra {
  triggers: () => Array<{ trigger: RunnableTrigger; status?: AgentTriggerStatus }>;
  /** With --hooks-addr: where deliveries go (…/hooks/NAMESPACE/TRIGGER). */
  hooksUrl?: string;
  /** Calls its listener once, after the next reconcile pass (or within a second): the console follows the view. */
  changed: (listener: () => void) => void;
}

export type LocalRunEnd =
  | { end: 'noTasks'; problem: string }
  | { end: 'interrupted'; view: LocalView }
  | { end: 'stateFull'; message: string; view: LocalView }
  | { end: 'settled'; view: LocalView; specErrors: number; triggers: number };

/** The state dir cannot be locked: another controller holds it (`inUse`) or it cannot be written (`why`). */
export class StateDirUnavailable extends Error {
  override name = 'StateDirUnavailable';
  readonly inUse: boolean;
  readonly code: string | undefined;
  readonly why: string | undefined;
  constructor(message: string, inUse: boolean, code?: string, why?: string) {
    super(message);
    this.inUse = inUse;
    this.code = code;
    this.why = why;
  }
}

export async function runLocal(opts: LocalRunOptions): Promise<LocalRunEnd> {
  const lock = await lockStateDir(opts.stateDir);
  const { logger } = opts;
  // prom-client is a noticeable part of start-up: it loads only when the metrics will be read (served or written at exit).
  const metrics: EpisodicMetrics | undefined =
    opts.metricsAddr || opts.metricsFile ? new (await import('../metrics/metrics.ts')).EpisodicMetrics() : undefined;
  const { dir, stateDir } = opts;
  const controller = new LocalController({
    dir,
    stateDir,
    maxConcurrent: opts.maxConcurrent,
    budgetUSD: opts.budgetUSD,
    logger,
    metrics,
  });
  const onInterrupt = () => {
    logger.warn({ signal: opts.interrupt.reason }, 'stopping: no new episodes; terminating running ones');
    void controller.shutdown();
  };
  if (opts.interrupt.aborted) onInterrupt();
  else opts.interrupt.addEventListener('abort', onInterrupt, { once: true });
  let server: RunningServer | undefined;
  let watcher: SpecWatcher | undefined;
  let timers: TriggerTimers | undefined;
  let hooks: HookServer | undefined;
  try {
    // node:http and chokidar load only when asked for: every run pays the start-up time of what it imports.
    if (opts.metricsAddr && metrics) {
      const { startMetricsServer } = await import('../metrics/server.ts');
      server = await startMetricsServer({ address: opts.metricsAddr, metrics, ready: () => true });
      logger.info({ url: `${server.url}/metrics` }, 'serving metrics');
    }
    const initial = await loadAndRecover(controller, opts);
    const runner = triggerRunner(controller, opts, metrics);
    // Without --watch each trigger makes one pass (a poll, the tick due now) before the run; with it, timers.
    if (!opts.watch) for (const t of runnableTriggers(initial.triggers?.values() ?? [])) await runner.pass(t);
    if (initial.tasks.size === 0 && !initial.triggers?.size && !opts.watch) {
      await recordDeletedTasks(controller, initial);
      return { end: 'noTasks', problem: initial.errors.length > 0 ? 'no valid AgentTask' : 'no AgentTask' };
    }
    logger.info({ dir, stateDir, tasks: initial.tasks.size }, 'specs loaded');
    controller.setSpecs(
      withoutFailedChecks(
        initial,
        checkSpecSet(initial.tasks.values(), () => dir, initial.credentials?.values()),
      ),
    );
    if (opts.watch) {
      timers = new TriggerTimers(runner, systemClock);
      // Listening before the first pass: a delivery sent once a trigger's status appears is never refused.
      if (opts.hooksAddr) hooks = await serveHooks(opts, timers, runner, metrics);
      timers.set(runnableTriggers(initial.triggers?.values() ?? []));
      followPhases(controller, new PhaseWakes(timers));
      watcher = await watchSpecs(controller, initial, opts, timers);
    }
    const shown = opts.show?.(() => controller.view(), liveExtra(controller, opts, timers, initial, hooks));
    try {
      const end = await runUntilDone(controller, opts, initial.errors.length);
      const triggers = runnableTriggers(initial.triggers?.values() ?? []);
      // Without --watch no pass follows: the forge comments are brought up to how the tasks ended.
      if (!opts.watch) for (const t of triggers) await runner.reportPass(t);
      return end.end === 'settled' ? { ...end, triggers: triggers.length } : end;
    } finally {
      shown?.stop();
    }
  } finally {
    opts.interrupt.removeEventListener('abort', onInterrupt);
    timers?.stop();
    await hooks?.close();
    await watcher?.close();
    await server?.close();
    if (opts.metricsFile && metrics) await writeFile(opts.metricsFile, await metrics.text());
    await lock.release();
  }
}

/** The triggers as last set (with --watch, the timers follow spec edits) and their status files, read when drawn. */
function liveExtra(
  controller: LocalController,
  opts: LocalRunOptions,
  timers: TriggerTimers | undefined,
  initial: LoadedSpecs,
  hooks?: HookServer,
): LiveExtra {
  const store = new LocalTriggerStatus(opts.stateDir);
  const current = () => timers?.all() ?? runnableTriggers(initial.triggers?.values() ?? []);
  return {
    triggers: () => current().map((trigger) => ({ trigger, status: store.read(trigger.key) })),
    hooksUrl: hooks ? `${hooks.url}/hooks` : undefined,
    changed: (listener) => controller.onChange(listener),
  };
}

/** Specs first: recovery reads an episode's log with its task's output settings. */
async function loadAndRecover(controller: LocalController, opts: LocalRunOptions): Promise<LoadedSpecs> {
  const { dir, logger } = opts;
  const initial = await loadSpecDir(dir);
  await controller.recover(initial);
  for (const line of initial.errors) logger.error(line);
  // What validate reports across files, said before any episode starts; the tasks concerned never start.
  const checked = checkSpecSet(initial.tasks.values(), () => dir, initial.credentials?.values());
  for (const line of checked.errors) logger.error(line);
  for (const line of checked.warnings) logger.warn(line);
  for (const line of initial.ignored) logger.debug(`ignored ${line}`);
  return initial;
}

/** No task to run, but tasks deleted while no controller ran may have episodes to record and logs to keep. */
async function recordDeletedTasks(controller: LocalController, initial: LoadedSpecs): Promise<void> {
  controller.setSpecs(initial);
  await waitUntil(controller, () => controller.settled() || controller.storeFull() !== undefined);
  await controller.shutdown();
}

async function serveHooks(
  opts: LocalRunOptions,
  timers: TriggerTimers,
  runner: TriggerRunner,
  metrics?: EpisodicMetrics,
): Promise<HookServer> {
  const { serveTriggerHooks } = await import('../sources/triggers/trigger-hooks.ts');
  return serveTriggerHooks(opts.hooksAddr ?? '', {
    trigger: (key) => timers.trigger(key),
    wake: (key) => timers.wake(key),
    runner,
    secret: envSecret,
    counters: metrics?.triggers,
    log: opts.logger,
  });
}

/** After each reconcile pass: the phases of triggers' tasks, so a reporting trigger's comment follows them. */
function followPhases(controller: LocalController, wakes: PhaseWakes): void {
  controller.onChange(() => {
    for (const { task, status } of controller.view()) wakes.seen(task.namespace, task.name, task.labels, status.phase);
    followPhases(controller, wakes);
  });
}

function triggerRunner(controller: LocalController, opts: LocalRunOptions, metrics?: EpisodicMetrics): TriggerRunner {
  return new TriggerRunner({
    created: controller.created,
    finished: (namespace, name) => controller.finished(namespace, name),
    taskStatus: (namespace, name) => controller.taskStatus(namespace, name),
    requestResume: (namespace, name, request) => localResumeRequester(opts.stateDir, namespace, name)(request),
    status: new LocalTriggerStatus(opts.stateDir),
    clock: systemClock,
    secret: envSecret,
    counters: metrics?.triggers,
    logger: opts.logger,
  });
}

async function watchSpecs(
  controller: LocalController,
  initial: LoadedSpecs,
  opts: LocalRunOptions,
  timers: TriggerTimers,
) {
  const { dir, logger } = opts;
  const { SpecWatcher } = await import('../sources/local/spec-watcher.ts');
  const watcher = new SpecWatcher({
    dir,
    onChange: (specs) => {
      for (const line of specs.errors) logger.error(line);
      timers.set(runnableTriggers(specs.triggers?.values() ?? []));
      controller.setSpecs(
        withoutFailedChecks(
          specs,
          checkSpecSet(specs.tasks.values(), () => dir, specs.credentials?.values()),
        ),
      );
    },
    onError: (err) => logger.error({ err }, 'watching spec files failed'),
  });
  watcher.seed(initial);
  await watcher.start();
  logger.info({ dir }, 'watching for spec changes');
  return watcher;
}

async function runUntilDone(controller: LocalController, opts: LocalRunOptions, specErrors: number) {
  const interrupted = () => opts.interrupt.aborted;
  // A full state disk ends a run (with --watch: it waits, retrying with backoff, and resumes when there is room).
  await waitUntil(
    controller,
    () => interrupted() || (!opts.watch && (controller.settled() || controller.storeFull() !== undefined)),
  );
  if (interrupted()) {
    await controller.shutdown();
    return { end: 'interrupted', view: controller.view() } as const;
  }
  const full = controller.storeFull();
  if (full) {
    await controller.abandon();
    return { end: 'stateFull', message: full.message, view: controller.view() } as const;
  }
  return { end: 'settled', view: controller.view(), specErrors, triggers: 0 } as const;
}

async function lockStateDir(stateDir: string): Promise<StateLock> {
  try {
    return await acquireStateLock(stateDir);
  } catch (err) {
    const code = writeBlocker(stateDir, err);
    // The first write to the state dir: say which directory cannot be written and why, not just the errno.
    const why =
      code === 'EROFS'
        ? 'is on a read-only file system'
        : code === 'EACCES' || code === 'EPERM'
          ? 'is not writable by this user'
          : undefined;
    throw new StateDirUnavailable((err as Error).message, err instanceof StateLockError, code, why);
  }
}

/**
 * The errno that keeps the state dir from being written. Node's recursive mkdir reports a missing state dir
 * under a read-only directory (a spec dir mounted read-only, the default DIR/.episodic) as ENOENT: then the
 * nearest directory that exists says why.
 */
function writeBlocker(stateDir: string, err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== 'ENOENT') return code;
  let parent = stateDir;
  while (!existsSync(parent) && dirname(parent) !== parent) parent = dirname(parent);
  try {
    accessSync(parent, constants.W_OK);
    return code;
  } catch (probe) {
    return (probe as NodeJS.ErrnoException).code ?? code;
  }
}

/** Re-checks the predicate whenever the controller reports a change (and at least once a second). */
async function waitUntil(controller: LocalController, done: () => boolean): Promise<void> {
  while (!done()) {
    await new Promise<void>((resolveWait) => {
      const timer = setTimeout(resolveWait, 1000);
      controller.onChange(() => {
        clearTimeout(timer);
        resolveWait();
      });
    });
  }
}
