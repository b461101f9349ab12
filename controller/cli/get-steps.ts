// A pipeline task's steps for `episodic get`: the GATE column (the gate the current step is fixing, fix
// episodes used of its maxFixEpisodes) and `episodic get NAME [DIR] --steps`, one row per step.
import { resolve } from 'node:path';
import { resolveStateDir } from '../util/state-layout.ts';
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import { stepGates } from '../api/steps.ts';
import { readLocalState } from '../console/local-state.ts';
import { printable } from '../util/printable.ts';
import { yamlLib } from '../util/yaml-lib.ts';
import { formatTable } from './live-table.ts';

/** "test 1/3": the gate whose check failed last in the current step, fix episodes used of the most it may have. */
export function gateSummary(spec: AgentTaskSpec | undefined, status: AgentTaskStatus): string {
  if (!spec) return '';
  const { gates, fixing } = stepGates(spec, status);
  if (!fixing) return '';
  const max = gates.find((g) => g.name === fixing.name)?.maxFixEpisodes;
  return `${printable(fixing.name)} ${fixing.fixEpisodes}/${max ?? '?'}`;
}

/** One row per step of status.steps (spec order), the current step marked with `*`. */
export function stepTable(spec: AgentTaskSpec | undefined, status: AgentTaskStatus): string {
  const header = ['#', 'STEP', 'PHASE', 'REASON', 'EPISODES', 'COST', 'GATE'];
  const rows = (status.steps ?? []).map((s, i) => {
    const current = status.step?.index === i + 1;
    const gate = s.gate ? `${printable(s.gate.name)} ${s.gate.fixEpisodes}/${maxFix(spec, i, s.gate.name)}` : '';
    return [
      `${current ? '*' : ' '}${i + 1}`,
      printable(s.name),
      s.phase,
      s.reason ?? '',
      String(s.episodes),
      `$${s.costUSD.toFixed(4)}`,
      gate,
    ];
  });
  return formatTable(header, rows);
}

function maxFix(spec: AgentTaskSpec | undefined, index: number, gate: string): string {
  const max = spec?.steps?.[index]?.gates?.find((g) => g.name === gate)?.maxFixEpisodes;
  return max === undefined ? '?' : String(max);
}

/** `get NAME [DIR] --steps`: the task's step list; -o json|yaml: status.step and status.steps as recorded. */
export async function getSteps(
  name: string,
  dirArg: string,
  opts: { output: string; stateDir?: string; namespace: string },
): Promise<number> {
  if (!['table', 'wide', 'json', 'yaml'].includes(opts.output)) {
    console.error(`episodic get: --output: "${opts.output}" is not one of table, wide, json, yaml`);
    return 2;
  }
  const dir = resolve(dirArg);
  let items: Awaited<ReturnType<typeof readLocalState>>['items'];
  try {
    ({ items } = await readLocalState(dir, resolveStateDir(dir, opts.stateDir)));
  } catch (err) {
    console.error(`episodic get: ${(err as Error).message}`);
    return 2;
  }
  const item = items.find(({ task }) => task.name === name && task.namespace === opts.namespace);
  if (!item) {
    console.error(`episodic get: no AgentTask ${opts.namespace}/${name} in ${dir}`);
    return 1;
  }
  const { task, status } = item;
  if (opts.output === 'json' || opts.output === 'yaml') {
    const view = { step: status.step ?? null, steps: status.steps ?? [] };
    process.stdout.write(opts.output === 'json' ? `${JSON.stringify(view, null, 2)}\n` : yamlLib().stringify(view));
    return 0;
  }
  if (!task.spec?.steps && !status.steps?.length) {
    console.error(`episodic get: ${opts.namespace}/${name} is not a pipeline (no spec.steps)`);
    return 1;
  }
  const phase = `${status.phase ?? 'Pending'}${status.reason ? ` (${status.reason})` : ''}`;
  const where = status.step?.summary ? `, step ${status.step.summary}` : '';
  process.stdout.write(`${opts.namespace}/${name}: ${phase}${where}\n${stepTable(task.spec, status)}\n`);
  return 0;
}
