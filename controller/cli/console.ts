// `episodic console [DIR]`: the web console over the local state, beside a running `episodic run` or after it.
import { resolve } from 'node:path';
import { resolveStateDir } from '../util/state-layout.ts';
import type { Command } from 'commander';

interface ConsoleOptions {
  stateDir?: string;
  listen: string;
}

export function registerConsole(program: Command): void {
  program
    .command('console')
    .description('serve the web console (fleet, tasks, budgets; live) for the AgentTasks in DIR')
    .argument('[dir]', 'directory of AgentTask YAML files', '.')
    .option('--state-dir <path>', 'state directory (default DIR/.episodic)')
    .option(
      '--listen <host:port>',
      'address to serve on; beyond localhost needs EPISODIC_CONSOLE_TOKEN',
      '127.0.0.1:8080',
    )
    .action(async (dir: string, opts: ConsoleOptions) => {
      process.exitCode = await consoleCommand(dir, opts);
    });
}

async function consoleCommand(dirArg: string, opts: ConsoleOptions): Promise<number> {
  const dir = resolve(dirArg);
  const stateDir = resolveStateDir(dir, opts.stateDir);
  const { startLocalConsole } = await import('../console/start-local.ts');
  const { ConsoleRefused } = await import('../console/server.ts');
  let running: Awaited<ReturnType<typeof startLocalConsole>>;
  try {
    running = await startLocalConsole({ dir, stateDir, listen: opts.listen });
  } catch (err) {
    console.error(`episodic console: ${(err as Error).message}`);
    return err instanceof ConsoleRefused ? 2 : 1;
  }
  console.log(`episodic console: serving ${dir} at ${running.url}/`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await running.close();
  return 0;
}
