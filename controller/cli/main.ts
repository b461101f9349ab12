// `episodic` CLI entry point: one module per subcommand, each registering itself on the program.
import { Command, CommanderError } from 'commander';
import { registerRun } from './run.ts';
import { registerGet } from './get.ts';
import { registerValidate } from './validate.ts';
import { registerLogs } from './logs.ts';
import { registerCrd } from './crd.ts';
import { registerController } from './controller.ts';
import { registerEpisode } from './episode.ts';
import { VERSION_STRING } from '../version.ts';

/** Exit code for invalid usage, as documented in the README. */
export const EXIT_USAGE = 2;

export function buildProgram(): Command {
  const program = new Command('episodic')
    .description('Run AI coding agents as episodes, reconciled like Kubernetes resources')
    .version(VERSION_STRING, '-v, --version')
    .showHelpAfterError()
    // Subcommand options only after the subcommand: lets `episode` pass the agent's own flags through.
    .enablePositionalOptions()
    .exitOverride();
  registerRun(program);
  registerGet(program);
  registerValidate(program);
  registerLogs(program);
  registerCrd(program);
  registerController(program);
  registerEpisode(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version "fail" with exit code 0; everything else is a usage error.
      process.exitCode = err.exitCode === 0 ? 0 : EXIT_USAGE;
      return;
    }
    console.error(`episodic: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  }
}

await main(process.argv);
