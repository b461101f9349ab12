// `episodic get [DIR]`: the local equivalent of `kubectl get agenttasks`.
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { emptyStatus, taskKey } from '../api/agent-task.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { FileStatusStore } from '../sinks/local/file-status.ts';
import { loadSpecDir } from '../sources/local/spec-files.ts';
import { yamlLib } from '../util/yaml-lib.ts';
import { formatTable } from './live-table.ts';

export function registerGet(program: Command): void {
  program
    .command('get')
    .description('show AgentTasks in DIR with their recorded status')
    .argument('[dir]', 'directory of AgentTask YAML files', '.')
    .option('-o, --output <format>', 'table, wide, json or yaml', 'table')
    .option('--state-dir <path>', 'state directory (default DIR/.episodic)')
    .action(async (dir: string, opts: { output: string; stateDir?: string }) => {
      process.exitCode = await getCommand(dir, opts);
    });
}

export async function getCommand(dirArg: string, opts: { output: string; stateDir?: string }): Promise<number> {
  if (!['table', 'wide', 'json', 'yaml'].includes(opts.output)) {
    console.error(`episodic get: --output: "${opts.output}" is not one of table, wide, json, yaml`);
    return 2;
  }
  const dir = resolve(dirArg);
  let specs;
  try {
    specs = await loadSpecDir(dir);
  } catch (err) {
    console.error(`episodic get: ${(err as Error).message}`);
    return 2;
  }
  for (const e of specs.errors) console.error(e);
  const store = new FileStatusStore(resolve(opts.stateDir ?? join(dir, '.episodic')));
  const { records } = await store.readAll();
  const statuses = new Map(records.map((r) => [taskKey(r.namespace, r.name), r]));
  const items = [...specs.tasks.values()].map((task) => {
    const record = statuses.get(task.key);
    const status: AgentTaskStatus = record?.status ?? emptyStatus();
    const metadata = { ...(task.manifest.metadata as object), name: task.name, namespace: task.namespace, generation: record?.generation ?? 1 };
    return { task, status, manifest: { ...task.manifest, metadata, status } };
  });
  if (opts.output === 'json' || opts.output === 'yaml') {
    const list = { apiVersion: 'v1', kind: 'List', items: items.map((i) => i.manifest) };
    if (opts.output === 'json') process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
    else process.stdout.write(yamlLib().stringify(list));
    return 0;
  }
  const wide = opts.output === 'wide';
  const header = ['NAMESPACE', 'NAME', 'PHASE', 'EPISODES', 'COST', 'REASON', ...(wide ? ['LAST OUTCOME', 'NEXT EPISODE', 'MESSAGE'] : [])];
  const rows = items.map(({ task, status }) => [
    task.namespace,
    task.name,
    status.phase ?? 'Pending',
    String(status.episodes),
    `$${status.costUSD.toFixed(4)}`,
    status.reason ?? '',
    ...(wide ? [status.lastEpisode?.outcome ?? '', status.nextEpisodeAt ?? '', status.message ?? ''] : []),
  ]);
  if (rows.length === 0) console.error(`No AgentTasks found in ${dir}.`);
  else process.stdout.write(`${formatTable(header, rows)}\n`);
  return 0;
}
