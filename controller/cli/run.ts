// `episodic run [DIR]`: local mode. Reconciles until every task is terminal (or forever with --watch).
// Exit codes: 0 all Succeeded, 1 otherwise, 2 invalid usage, 3 the state disk is full, 130 interrupted by
// SIGINT/SIGTERM.
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import type { EpisodicMetrics } from '../metrics/metrics.ts';
import type { RunningServer } from '../metrics/server.ts';
import { LocalController } from '../local/local-controller.ts';
import { acquireStateLock, StateLockError } from '../local/state-lock.ts';
import { checkSpecSet, withoutFailedChecks } from '../sources/local/spec-checks.ts';
import { loadSpecDir } from '../sources/local/spec-files.ts';
import type { SpecWatcher } from '../sources/local/spec-watcher.ts';
import { createLogger } from '../util/logger.ts';
import { LiveTable } from './live-table.ts';
import { parseNumberOption, UsageError } from './options.ts';

/** The state disk filled up: nothing more could be recorded. */
const EXIT_STATE_FULL = 3;

export interface RunOptions {
  watch?: boolean;
  stateDir?: string;
  maxConcurrent: string;
  budgetUsd?: string;
  metricsAddr?: string;
  metricsFile?: string;
  logLevel: string;
  table?: boolean;
}

export function registerRun(program: Command): void {
  program
    .command('run')
    .description('reconcile the AgentTasks in DIR into local agent processes')
    .argument('[dir]', 'directory of AgentTask YAML files', '.')
    .option('-w, --watch', 'keep running and follow changes to the spec files')
    .option('--state-dir <path>', 'where status, logs and the lock live (default DIR/.episodic)')
    .option('--max-concurrent <n>', 'episodes running at once, across tasks', '4')
    .option('--budget-usd <usd>', 'stop starting episodes once all tasks together spent this much')
    .option('--metrics-addr <host:port>', 'serve /metrics, /healthz and /readyz here')
    .option('--metrics-file <path>', 'write Prometheus text metrics here on exit (textfile collector)')
    .option('--log-level <level>', 'trace, debug, info, warn, error', 'info')
    .option('--no-table', 'JSON logs even on a terminal')
    .action(async (dir: string, opts: RunOptions) => {
      process.exitCode = await runCommand(dir, opts);
    });
}

export async function runCommand(dirArg: string, opts: RunOptions): Promise<number> {
  const dir = resolve(dirArg);
  let maxConcurrent: number;
  let budgetUSD: number | undefined;
  try {
    if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UsageError(`${dirArg}: not a directory`);
    maxConcurrent = parseNumberOption('--max-concurrent', opts.maxConcurrent, { integer: true, min: 1 });
    budgetUSD =
      opts.budgetUsd === undefined ? undefined : parseNumberOption('--budget-usd', opts.budgetUsd, { min: 0 });
  } catch (err) {
    console.error(`episodic run: ${(err as Error).message}`);
    return 2;
  }
  const stateDir = resolve(opts.stateDir ?? join(dir, '.episodic'));
  const live = opts.table !== false && process.stdout.isTTY === true;
  // On a terminal the table owns the screen, so logs go to a file beside the state.
  const logger = createLogger({ level: opts.logLevel, file: live ? join(stateDir, 'controller.log') : undefined });

  let lock: Awaited<ReturnType<typeof acquireStateLock>>;
  try {
    lock = await acquireStateLock(stateDir);
  } catch (err) {
    const code = writeBlocker(stateDir, err);
    // The first write to the state dir: say which directory cannot be written and what to do, not just the errno.
    const why =
      code === 'EROFS'
        ? 'is on a read-only file system'
        : code === 'EACCES' || code === 'EPERM'
          ? 'is not writable by this user'
          : undefined;
    if (why)
      console.error(
        `episodic run: the state dir ${stateDir} ${why} (${code}); pass --state-dir with a writable directory`,
      );
    else console.error(`episodic run: ${(err as Error).message}`);
    return err instanceof StateLockError ? 1 : 2;
  }
  // prom-client is a noticeable part of start-up: it loads only when the metrics will be read (served or written at exit).
  const metrics: EpisodicMetrics | undefined =
    opts.metricsAddr || opts.metricsFile ? new (await import('../metrics/metrics.ts')).EpisodicMetrics() : undefined;
  const controller = new LocalController({ dir, stateDir, maxConcurrent, budgetUSD, logger, metrics });
  let server: RunningServer | undefined;
  let watcher: SpecWatcher | undefined;
  let table: LiveTable | undefined;
  let interrupted = false;
  const onSignal = (signal: string) => {
    if (interrupted) return;
    interrupted = true;
    logger.warn({ signal }, 'stopping: no new episodes; terminating running ones');
    void controller.shutdown();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    // node:http and chokidar load only when asked for: every run pays the start-up time of what it imports.
    if (opts.metricsAddr && metrics) {
      const { startMetricsServer } = await import('../metrics/server.ts');
      server = await startMetricsServer({ address: opts.metricsAddr, metrics, ready: () => true });
      logger.info({ url: `${server.url}/metrics` }, 'serving metrics');
    }
    // Specs first: recovery reads an episode's log with its task's output settings.
    const initial = await loadSpecDir(dir);
    await controller.recover(initial);
    for (const line of initial.errors) logger.error(line);
    // What validate reports across files, said before any episode starts; the tasks concerned never start.
    const checked = checkSpecSet(initial.tasks.values(), () => dir);
    for (const line of checked.errors) logger.error(line);
    for (const line of checked.warnings) logger.warn(line);
    for (const line of initial.ignored) logger.debug(`ignored ${line}`);
    if (initial.tasks.size === 0 && !opts.watch) {
      const problem = initial.errors.length > 0 ? 'no valid AgentTask' : 'no AgentTask';
      console.error(`episodic run: ${problem} found in ${dir}`);
      return 1;
    }
    logger.info({ dir, stateDir, tasks: initial.tasks.size }, 'specs loaded');
    controller.setSpecs(withoutFailedChecks(initial, checked));
    if (opts.watch) {
      const { SpecWatcher } = await import('../sources/local/spec-watcher.ts');
      watcher = new SpecWatcher({
        dir,
        onChange: (specs) => {
          for (const line of specs.errors) logger.error(line);
          controller.setSpecs(
            withoutFailedChecks(
              specs,
              checkSpecSet(specs.tasks.values(), () => dir),
            ),
          );
        },
        onError: (err) => logger.error({ err }, 'watching spec files failed'),
      });
      watcher.seed(initial);
      await watcher.start();
      logger.info({ dir }, 'watching for spec changes');
    }
    if (live) table = new LiveTable(() => controller.view());
    // A full state disk ends a run (with --watch: it waits, retrying with backoff, and resumes when there is room).
    await waitUntil(
      controller,
      () => interrupted || (!opts.watch && (controller.settled() || controller.storeFull() !== undefined)),
    );
    if (interrupted) await controller.shutdown();
    const full = interrupted ? undefined : controller.storeFull();
    if (full) await controller.abandon();
    table?.stop();
    const view = controller.view();
    if (!live)
      for (const { task, status } of view)
        logger.info(
          {
            namespace: task.namespace,
            task: task.name,
            phase: status.phase,
            reason: status.reason,
            message: status.message,
            episodes: status.episodes,
            costUSD: status.costUSD,
          },
          'final status',
        );
    else LiveTable.print(view);
    if (interrupted) return 130;
    if (full) {
      console.error(
        `episodic run: ${full.message}. No new episode was started and running ones were stopped; what is recorded is kept. Free space and run again.`,
      );
      return EXIT_STATE_FULL;
    }
    const allSucceeded =
      view.length > 0 && view.every(({ status }) => status.phase === 'Succeeded') && initial.errors.length === 0;
    return allSucceeded ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    table?.stop();
    await watcher?.close();
    await server?.close();
    if (opts.metricsFile && metrics) await writeFile(opts.metricsFile, await metrics.text());
    await lock.release();
    await new Promise<void>((r) => logger.flush(() => r()));
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
