// `episodic` CLI entry point: one module per subcommand, each registering itself on the program.
import { Command, CommanderError } from 'commander';
import { VERSION_STRING } from '../version.ts';

/** Exit code for invalid usage, as documented in the README. */
export const EXIT_USAGE = 2;

type Register = (program: Command) => void;

/**
 * Subcommand → its module. Only the named subcommand's module is loaded (each pulls in what its command runs:
 * zod, pino, prom-client, client-node…), so `episodic get` does not pay for `run` and `--version` for nothing.
 */
const COMMANDS: Record<string, () => Promise<Register>> = {
  run: async () => (await import('./run.ts')).registerRun,
  get: async () => (await import('./get.ts')).registerGet,
  resume: async () => (await import('./resume.ts')).registerResume,
  suspend: async () => (await import('./suspend.ts')).registerSuspend,
  unsuspend: async () => (await import('./suspend.ts')).registerUnsuspend,
  send: async () => (await import('./send.ts')).registerSend,
  validate: async () => (await import('./validate.ts')).registerValidate,
  init: async () => (await import('./init.ts')).registerInit,
  logs: async () => (await import('./logs.ts')).registerLogs,
  console: async () => (await import('./console.ts')).registerConsole,
  crd: async () => (await import('./crd.ts')).registerCrd,
  controller: async () => (await import('./controller.ts')).registerController,
  episode: async () => (await import('./episode.ts')).registerEpisode,
  'queue-gates': async () => (await import('./queue-gates.ts')).registerQueueGates,
  blackboard: async () => (await import('./blackboard.ts')).registerBlackboard,
};

/** The subcommands to register for these arguments: the one named, none for --version, all for help and errors. */
export function commandsFor(args: string[]): string[] {
  const first = args[0];
  if (first !== undefined && Object.hasOwn(COMMANDS, first)) return [first];
  if (args.length === 1 && (first === '-v' || first === '--version')) return [];
  return Object.keys(COMMANDS);
}

export async function buildProgram(commands: string[] = Object.keys(COMMANDS)): Promise<Command> {
  const program = new Command('episodic')
    .description('Run AI coding agents as episodes, reconciled like Kubernetes resources')
    .version(VERSION_STRING, '-v, --version')
    .showHelpAfterError()
    // Subcommand options only after the subcommand: lets `episode` pass the agent's own flags through.
    .enablePositionalOptions()
    .exitOverride();
  const registers = await Promise.all(commands.map((name) => COMMANDS[name]()));
  for (const register of registers) register(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    const program = await buildProgram(commandsFor(argv.slice(2)));
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
