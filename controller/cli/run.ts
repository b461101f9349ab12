// `episodic run [DIR]`: local mode. Reconciles until every task is terminal (or forever with --watch).
// Exit codes: 0 all Succeeded, 1 otherwise, 2 invalid usage, 3 the state disk is full, 130 interrupted by
// SIGINT/SIGTERM.
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { controllerLogPath, resolveStateDir } from '../util/state-layout.ts';
import type { Command } from 'commander';
import { runLocal, StateDirUnavailable } from '../local/run-local.ts';
import type { LiveExtra, LocalRunEnd, LocalView } from '../local/run-local.ts';
import { createLogger } from '../util/logger.ts';
import { LOG_FORMATS } from '../util/log-lines.ts';
import type { LogFormat } from '../util/log-lines.ts';
import type { Logger } from 'pino';
import { LiveTable } from './live-table.ts';
import type { TriggerPanel } from './live-table.ts';
import { nextSteps, nothingToRun } from './run-report.ts';
import { invocation } from './invocation.ts';
import { parseNumberOption, UsageError } from './options.ts';

/** The state disk filled up: nothing more could be recorded. */
const EXIT_STATE_FULL = 3;

export interface RunOptions {
  watch?: boolean;
  stateDir?: string;
  maxConcurrent: string;
  budgetUsd?: string;
  metricsAddr?: string;
  hooksAddr?: string;
  metricsFile?: string;
  logLevel: string;
  logFormat: string;
  table?: boolean;
  console?: string;
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
    .option('--hooks-addr <host:port>', 'with --watch: serve POST /hooks/NAMESPACE/TRIGGER (signed webhook deliveries)')
    .option('--metrics-file <path>', 'write Prometheus text metrics here on exit (textfile collector)')
    .option('--log-level <level>', 'trace, debug, info, warn, error', 'info')
    .option('--no-table', 'event lines (see --log-format) instead of the live table, even on a terminal')
    .option(
      '--log-format <format>',
      'off the terminal table: text (a line per event, then the summary) or json (JSON lines for machines)',
      'text',
    )
    .option(
      '--console <host:port>',
      'serve the web console here while running (beyond localhost needs EPISODIC_CONSOLE_TOKEN)',
    )
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
    if (!(LOG_FORMATS as readonly string[]).includes(opts.logFormat))
      throw new UsageError(`--log-format: "${opts.logFormat}" is not one of ${LOG_FORMATS.join(', ')}`);
    maxConcurrent = parseNumberOption('--max-concurrent', opts.maxConcurrent, { integer: true, min: 1 });
    budgetUSD =
      opts.budgetUsd === undefined ? undefined : parseNumberOption('--budget-usd', opts.budgetUsd, { min: 0 });
  } catch (err) {
    console.error(`episodic run: ${(err as Error).message}`);
    return 2;
  }
  const stateDir = resolveStateDir(dir, opts.stateDir);
  const live = opts.table !== false && process.stdout.isTTY === true;
  const format = opts.logFormat as LogFormat;
  // On a terminal the table owns the screen, so logs go to a file beside the state (JSON: for machines).
  const logger = live
    ? createLogger({ level: opts.logLevel, file: controllerLogPath(stateDir) })
    : createLogger({ level: opts.logLevel, format });
  let extra: LiveExtra | undefined;
  let consoleServer: Awaited<ReturnType<typeof startConsoleFor>> | undefined;
  try {
    consoleServer = opts.console === undefined ? undefined : await startConsoleFor(dir, stateDir, opts.console, logger);
  } catch (err) {
    console.error(`episodic run: --console: ${(err as Error).message}`);
    return 2;
  }
  const interrupt = new AbortController();
  const onSignal = (signal: string) => interrupt.abort(signal);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const end = await runLocal({
      dir,
      stateDir,
      watch: opts.watch === true,
      maxConcurrent,
      budgetUSD,
      logger,
      metricsAddr: opts.metricsAddr,
      hooksAddr: opts.hooksAddr,
      metricsFile: opts.metricsFile,
      interrupt: interrupt.signal,
      show: (view, given) => {
        extra = given;
        // The console shows the controller's own statuses: no file read can miss a quick second write.
        // …and the hook server's bound address (a :0 port is known only now).
        consoleServer?.follow(view, given.changed, given.hooksUrl);
        return live ? new LiveTable(view, process.stdout, () => panelOf(given, opts)) : { stop() {} };
      },
    });
    // The event lines are out before the summary that follows them (one pipe may carry both).
    await new Promise<void>((r) => logger.flush(() => r()));
    const how = { dirArg, dir, live, logger, format, panel: extra && panelOf(extra, opts) };
    return report(end, how);
  } catch (err) {
    if (!(err instanceof StateDirUnavailable)) throw err;
    if (err.why)
      console.error(
        `episodic run: the state dir ${stateDir} ${err.why} (${err.code}); pass --state-dir with a writable directory`,
      );
    else console.error(`episodic run: ${err.message}`);
    return err.inUse ? 1 : 2;
  } finally {
    await consoleServer?.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await new Promise<void>((r) => logger.flush(() => r()));
  }
}

/** The console over this run's state dir (loaded only when asked for). */
async function startConsoleFor(dir: string, stateDir: string, listen: string, logger: Logger) {
  const { startLocalConsole } = await import('../console/start-local.ts');
  const running = await startLocalConsole({ dir, stateDir, listen });
  logger.info({ url: `${running.url}/` }, 'serving the console');
  return running;
}

/** The triggers for the table: as recorded when drawn. */
function panelOf(extra: LiveExtra, opts: RunOptions): TriggerPanel {
  return { triggers: extra.triggers(), watching: opts.watch === true, hooksUrl: extra.hooksUrl };
}

interface ReportHow {
  dirArg: string;
  dir: string;
  live: boolean;
  logger: Logger;
  format: LogFormat;
  panel?: TriggerPanel;
}

/** Says how the run ended (the final table, or for json a log line per task) and returns the exit code. */
function report(end: LocalRunEnd, how: ReportHow): number {
  if (end.end === 'noTasks') {
    console.error(`episodic run: ${end.problem} found in ${how.dir}`);
    return 1;
  }
  const idle = end.end === 'settled' ? nothingToRun(end.view.length, end.triggers) : undefined;
  if (idle) {
    process.stdout.write(`episodic run: ${idle}\n`);
    return 0;
  }
  if (how.live || how.format === 'text') {
    LiveTable.print(end.view, process.stdout, how.panel);
    if (end.end === 'settled') process.stdout.write(`${nextSteps(invocation(), how.dirArg, end.view).join('\n')}\n`);
  } else logFinalStatus(end.view, how.logger);
  if (end.end === 'interrupted') return 130;
  if (end.end === 'stateFull') {
    console.error(
      `episodic run: ${end.message}. No new episode was started and running ones were stopped; what is recorded is kept. Free space and run again.`,
    );
    return EXIT_STATE_FULL;
  }
  const allSucceeded =
    end.view.length > 0 && end.view.every(({ status }) => status.phase === 'Succeeded') && end.specErrors === 0;
  return allSucceeded ? 0 : 1;
}

function logFinalStatus(view: LocalView, logger: Logger): void {
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
}
