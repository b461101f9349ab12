// `episodic queue-gates`: the entry point of a cluster merge queue's gate pod. The controller passes the
// scratch branch, the rebased commit and the gates through EPISODIC_QUEUE_GATES_CONFIG; the runner answers
// with the gates' runs in the termination message (runner/run-queue-gates.ts).
import type { Command } from 'commander';
import { TERMINATION_LOG } from '../api/episode-config.ts';

export function registerQueueGates(program: Command): void {
  program
    .command('queue-gates')
    .description("run a merge queue's gates inside its gate pod (used by the cluster controller)")
    .option('--result-file <path>', 'where to write the result (the termination message)', TERMINATION_LOG)
    .action(async (options: { resultFile: string }) => {
      const stop = new AbortController();
      // PID 1 in the pod: without a handler SIGTERM would wait for the SIGKILL.
      const onSignal = () => stop.abort();
      process.on('SIGTERM', onSignal);
      process.on('SIGINT', onSignal);
      try {
        const { runQueueGatesPod } = await import('../runner/run-queue-gates.ts');
        process.exitCode = await runQueueGatesPod({
          resultFile: options.resultFile,
          env: process.env,
          stdout: process.stdout,
          log: (line) => process.stderr.write(`episodic: ${line}\n`),
          signal: stop.signal,
        });
      } finally {
        process.off('SIGTERM', onSignal);
        process.off('SIGINT', onSignal);
      }
    });
}
