// What `episodic run` says once it ends, beside the final table: that there was nothing to run, and what to
// try next. Pure: the run's end in, the words out.
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { shellWord } from './invocation.ts';

/** No task ran but triggers are defined: they make tasks only while `run --watch` serves them. */
export function nothingToRun(tasks: number, triggers: number): string | undefined {
  if (tasks > 0 || triggers === 0) return undefined;
  return `nothing to run; ${triggers} trigger${triggers === 1 ? ' is' : 's are'} served only with --watch`;
}

/** The commands to look further, for the task most worth a look (the first that did not succeed). */
export function nextSteps(
  cli: string,
  dirArg: string,
  view: ReadonlyArray<{ task: { name: string; namespace: string }; status: AgentTaskStatus }>,
): string[] {
  if (view.length === 0) return [];
  const pick = view.find(({ status }) => status.phase !== 'Succeeded') ?? view[0];
  const dir = dirArg === '.' ? '' : ` ${shellWord(dirArg)}`;
  const ns = pick.task.namespace === 'default' ? '' : ` -n ${shellWord(pick.task.namespace)}`;
  const name = shellWord(pick.task.name);
  const hints: Array<[string, string]> = [
    [`${cli} get${dir}`, 'every task and why it is where it is'],
    [`${cli} get ${name}${dir}${ns} --episodes`, 'its episodes: duration, gates, ops, cost'],
    [`${cli} logs ${name}${dir}${ns}`, 'what its agent said'],
    [`${cli} console${dir}`, 'the same in a browser'],
  ];
  const width = Math.max(...hints.map(([command]) => command.length));
  return ['Next:', ...hints.map(([command, what]) => `  ${command.padEnd(width)}   ${what}`)];
}
