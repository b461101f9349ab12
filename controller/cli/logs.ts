// `episodic logs NAME [DIR]`: an episode's output, like `kubectl logs`; -f follows the task across episodes.
// Rendered for a person by default (log-render.ts), the log's bytes as they are with --raw.
import { createReadStream, existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { isTerminal } from '../api/agent-task.ts';
import type { EpisodeRecord } from '../api/episode-record.ts';
import { episodeHeader, LogRenderer } from '../executors/output/log-render.ts';
import { readRecords } from '../sinks/local/episode-records.ts';
import { episodeLogPath, episodeOfLogFile, episodesPath, resolveStateDir, taskLogsDir } from '../util/state-layout.ts';
import { FileStatusStore } from '../sinks/local/file-status.ts';
import { terminalColumns } from './live-table.ts';
import { parseNumberOption, UsageError } from './options.ts';

interface LogsOptions {
  episode?: string;
  follow?: boolean;
  raw?: boolean;
  namespace: string;
  dir?: string;
  stateDir?: string;
  kubeconfig?: string;
}

/** Where a log goes: straight through (--raw), or rendered line by line. */
interface Sink {
  begin(episode: number, record: EpisodeRecord | undefined): void;
  chunk(data: Buffer): void;
  end(): void;
}

export function registerLogs(program: Command): void {
  program
    .command('logs')
    .description("print an episode's output, rendered for reading (default: the latest episode)")
    .argument('<name>', 'AgentTask name')
    .argument('[dir]', 'spec directory (default .)')
    .option('--episode <n>', 'episode number (1-based)')
    .option('-f, --follow', 'keep printing as the task runs, episode after episode')
    .option('--raw', 'the log as it is on disk: the agent output bytes and the controller notes')
    .option('-n, --namespace <ns>', 'namespace', 'default')
    .option('-d, --dir <dir>', 'spec directory (the same as DIR)')
    .option('--state-dir <path>', 'state directory (default DIR/.episodic)')
    .option('--kubeconfig <path>', "read the episode pod's log on this cluster instead (-f: while the pod runs)")
    .action(async (name: string, dir: string | undefined, opts: LogsOptions) => {
      process.exitCode =
        opts.kubeconfig === undefined ? await logsCommand(name, dir, opts) : await onCluster(name, opts);
    });
}

async function onCluster(name: string, opts: LogsOptions & { kubeconfig?: string }): Promise<number> {
  let episode: number | undefined;
  try {
    if (opts.episode) episode = parseNumberOption('--episode', opts.episode, { integer: true, min: 1 });
  } catch (err) {
    console.error(`episodic logs: ${(err as Error).message}`);
    return 2;
  }
  const { logsOnCluster } = await import('./logs-cluster.ts');
  return logsOnCluster(name, { ...opts, kubeconfig: opts.kubeconfig as string, episode });
}

async function logsCommand(name: string, dirArg: string | undefined, opts: LogsOptions): Promise<number> {
  let episode: number;
  let stateDir: string;
  try {
    if (dirArg !== undefined && opts.dir !== undefined && resolve(dirArg) !== resolve(opts.dir))
      throw new UsageError(`two directories given: ${dirArg} and --dir ${opts.dir}`);
    stateDir = resolveStateDir(dirArg ?? opts.dir ?? '.', opts.stateDir);
    episode = opts.episode
      ? parseNumberOption('--episode', opts.episode, { integer: true, min: 1 })
      : await latestEpisode(taskLogsDir(stateDir, opts.namespace, name));
  } catch (err) {
    console.error(`episodic logs: ${(err as Error).message}`);
    return 2;
  }
  const records = new Map((await readRecords(episodesPath(stateDir, opts.namespace, name))).map((r) => [r.number, r]));
  const sink = opts.raw ? rawSink() : renderedSink(`${opts.namespace}/${name}`);
  if (!opts.follow) {
    const file = episodeLogPath(stateDir, opts.namespace, name, episode);
    if (!existsSync(file)) {
      console.error(`episodic logs: no log for ${opts.namespace}/${name} episode ${episode} (${file})`);
      return 1;
    }
    sink.begin(episode, records.get(episode));
    await readRange(file, 0, Infinity, sink);
    sink.end();
    return 0;
  }
  await follow(stateDir, opts.namespace, name, episode, sink, records);
  return 0;
}

/** Prints the episode's log as it grows, then the next episode's, until the task is terminal. */
async function follow(
  stateDir: string,
  namespace: string,
  name: string,
  first: number,
  sink: Sink,
  records: Map<number, EpisodeRecord>,
): Promise<void> {
  const store = new FileStatusStore(stateDir);
  for (let episode = first; ; episode++) {
    const file = episodeLogPath(stateDir, namespace, name, episode);
    sink.begin(episode, records.get(episode));
    let offset = 0;
    for (;;) {
      const size = (await stat(file).catch(() => undefined))?.size ?? 0;
      if (size > offset) {
        await readRange(file, offset, size - 1, sink);
        offset = size;
      }
      const { records: statuses } = await store.readAll();
      const status = statuses.find((r) => r.namespace === namespace && r.name === name)?.status;
      const moved = existsSync(episodeLogPath(stateDir, namespace, name, episode + 1));
      if (moved && size === offset) break;
      if (status && isTerminal(status.phase) && !status.currentEpisode && size === offset) {
        sink.end();
        return;
      }
      await sleep(300);
    }
    sink.end();
  }
}

function rawSink(): Sink {
  return {
    begin: () => undefined,
    chunk: (data) => process.stdout.write(data),
    end: () => undefined,
  };
}

function renderedSink(task: string): Sink {
  const width = terminalColumns() ?? 160;
  let renderer: LogRenderer | undefined;
  return {
    begin(episode, record) {
      process.stdout.write(`${episodeHeader(task, episode, record)}\n`);
      renderer = new LogRenderer((text) => process.stdout.write(text), width);
    },
    chunk: (data) => renderer?.push(data),
    end: () => renderer?.end(),
  };
}

async function latestEpisode(dir: string): Promise<number> {
  const files = await readdir(dir).catch(() => [] as string[]);
  const numbers = files.flatMap((f) => episodeOfLogFile(f) ?? []);
  if (numbers.length === 0) throw new Error(`no episode logs in ${dir}`);
  return Math.max(...numbers);
}

/** Feeds a byte range of the file to the sink. */
function readRange(file: string, start: number, end: number, sink: Sink): Promise<void> {
  return new Promise((done, fail) => {
    const stream = createReadStream(file, { start, end: Number.isFinite(end) ? end : undefined });
    stream.on('data', (data) => {
      sink.chunk(data as Buffer);
      // A slow reader (a pager) holds us back instead of the output piling up in memory.
      if (process.stdout.writableNeedDrain) {
        stream.pause();
        process.stdout.once('drain', () => stream.resume());
      }
    });
    stream.on('error', fail).on('end', () => done());
  });
}
