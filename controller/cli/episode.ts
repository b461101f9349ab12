// `episodic episode [--] <agent argv...>`: the episode runner, the entry point of every episode pod. The
// controller passes the episode through EPISODIC_EPISODE_CONFIG and EPISODIC_PROMPT; the runner answers
// with an EpisodeResult in the termination message and exits with the agent's exit code.
// See docs/episode-runner.md.
import type { Command } from 'commander';
import { TERMINATION_LOG } from '../api/episode-config.ts';

export function registerEpisode(program: Command): void {
  program
    .command('episode')
    .description('run one episode of an agent inside an episode pod (used by the cluster controller)')
    .option('--result-file <path>', 'where to write the EpisodeResult (the termination message)', TERMINATION_LOG)
    .option('--log-file <path>', "also keep the agent's output in this file")
    .argument('<agent...>', 'the agent command (`--` before it is optional)')
    // Everything from the agent's name on is the agent's argv, even flags that look like ours (--log-file).
    .passThroughOptions()
    .action(async (agentArgv: string[], options: { resultFile: string; logFile?: string }) => {
      const stop = new AbortController();
      // In a pod the runner is PID 1: without handlers SIGTERM would be ignored until the SIGKILL.
      const onSignal = (signal: NodeJS.Signals) => {
        process.stderr.write(`episodic: ${signal}: stopping the agent\n`);
        stop.abort();
      };
      process.on('SIGTERM', onSignal);
      process.on('SIGINT', onSignal);
      try {
        const { runEpisode } = await import('../runner/run-episode.ts'); // not loaded by other subcommands
        const { exitCode } = await runEpisode({
          agentArgv,
          resultFile: options.resultFile,
          logFile: options.logFile,
          env: process.env,
          stdout: process.stdout,
          log: (line) => process.stderr.write(`episodic: ${line}\n`),
          signal: stop.signal,
        });
        process.exitCode = exitCode;
      } finally {
        process.off('SIGTERM', onSignal);
        process.off('SIGINT', onSignal);
      }
    });
}
