// `episodic logs NAME`: an episode's output, like `kubectl logs`; -f follows the task across episodes.
import { createReadStream, existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { isTerminal } from '../api/agent-task.ts';
import { FileStatusStore } from '../sinks/local/file-status.ts';
import { episodeLogPath } from '../executors/local/episode-launcher.ts';
import { parseNumberOption } from './options.ts';

interface LogsOptions {
  episode?: string;
  follow?: boolean;
  namespace: string;
  dir: string;
  stateDir?: string;
}

export function registerLogs(program: Command): void {
  program
    .command('logs')
    .description("print an episode's output (default: the latest episode)")
    .argument('<name>', 'AgentTask name')
    .option('--episode <n>', 'episode number (1-based)')
    .option('-f, --follow', 'keep printing as the task runs, episode after episode')
    .option('-n, --namespace <ns>', 'namespace', 'default')
    .option('-d, --dir <dir>', 'spec directory', '.')
    .option('--state-dir <path>', 'state directory (default DIR/.episodic)')
    .action(async (name: string, opts: LogsOptions) => {
      process.exitCode = await logsCommand(name, opts);
    });
}

async function logsCommand(name: string, opts: LogsOptions): Promise<number> {
  const stateDir = resolve(opts.stateDir ?? join(opts.dir, '.episodic'));
  const dir = join(stateDir, 'logs', opts.namespace, name);
  let episode: number;
  try {
    episode = opts.episode
      ? parseNumberOption('--episode', opts.episode, { integer: true, min: 1 })
      : await latestEpisode(dir);
  } catch (err) {
    console.error(`episodic logs: ${(err as Error).message}`);
    return 2;
  }
  if (!opts.follow) {
    const file = episodeLogPath(stateDir, opts.namespace, name, episode);
    if (!existsSync(file)) {
      console.error(`episodic logs: no log for ${opts.namespace}/${name} episode ${episode} (${file})`);
      return 1;
    }
    await pipeRange(file, 0, Infinity);
    return 0;
  }
  const store = new FileStatusStore(stateDir);
  for (;;) {
    const file = episodeLogPath(stateDir, opts.namespace, name, episode);
    let offset = 0;
    for (;;) {
      const size = (await stat(file).catch(() => undefined))?.size ?? 0;
      if (size > offset) {
        await pipeRange(file, offset, size - 1);
        offset = size;
      }
      const { records } = await store.readAll();
      const status = records.find((r) => r.namespace === opts.namespace && r.name === name)?.status;
      const moved = existsSync(episodeLogPath(stateDir, opts.namespace, name, episode + 1));
      if (moved && size === offset) break;
      if (status && isTerminal(status.phase) && !status.currentEpisode && size === offset) return 0;
      await sleep(300);
    }
    episode++;
  }
}

async function latestEpisode(dir: string): Promise<number> {
  const files = await readdir(dir).catch(() => [] as string[]);
  const numbers = files
    .map((f) => /^episode-(\d+)\.log$/.exec(f)?.[1])
    .filter(Boolean)
    .map(Number);
  if (numbers.length === 0) throw new Error(`no episode logs in ${dir}`);
  return Math.max(...numbers);
}

function pipeRange(file: string, start: number, end: number): Promise<void> {
  return new Promise((done, fail) => {
    const stream = createReadStream(file, { start, end: Number.isFinite(end) ? end : undefined });
    stream.on('error', fail).on('end', () => done());
    stream.pipe(process.stdout, { end: false });
  });
}
