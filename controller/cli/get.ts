// `episodic get [DIR]`: the local equivalent of `kubectl get agenttasks`; `episodic get NAME [DIR]
// --episodes` lists a task's episode records, like `kubectl get ae -l episodic.dev/task=NAME`.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { EPISODES_FILE, episodesPath, resolveStateDir } from '../util/state-layout.ts';
import type { Command } from 'commander';
import { API_VERSION } from '../api/agent-task.ts';
import { EPISODE_KIND } from '../api/episode-record.ts';
import type { EpisodeRecord } from '../api/episode-record.ts';
import { EPISODE_LABEL, TASK_LABEL, episodePodName } from '../kube/names.ts';
import { lastDeletedTaskDir, readRecords } from '../sinks/local/episode-records.ts';
import { readEpisodes, readLocalState, readStoredStatuses } from '../console/local-state.ts';
import type { LocalState } from '../console/local-state.ts';
import { getSteps, stepTable } from './get-steps.ts';
import { childrenTable } from './get-children.ts';
import { stackLines } from './get-stack.ts';
import { integrateLines } from './get-integrate.ts';
import { credentialsLines, episodeTable, taskStarted, taskTable } from './get-rows.ts';
import { yamlLib } from '../util/yaml-lib.ts';
import { fitLastColumn, formatTable, terminalColumns } from './live-table.ts';
import { printable } from '../util/printable.ts';
import { opsRejectedLines } from './get-ops.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { reviewCount } from '../api/review.ts';
import { reviewWords } from '../reconciler/review.ts';

interface GetOptions {
  output: string;
  stateDir?: string;
  steps?: boolean;
  episodes?: boolean;
  audit?: boolean;
  review?: boolean;
  namespace: string;
  kubeconfig?: string;
  allNamespaces?: boolean;
}

export function registerGet(program: Command): void {
  program
    .command('get')
    .description('show AgentTasks in DIR with their recorded status; with --episodes, the episode records of task NAME')
    .usage('[DIR] [options]  |  NAME [DIR] [options]  |  NAME [DIR] --episodes [options]')
    .argument('[dir-or-name]', 'directory of AgentTask YAML files (default .), or a task NAME (then DIR second)')
    .argument('[dir]', 'after NAME: the directory (default .)')
    .option('-o, --output <format>', 'table, wide, json or yaml', 'table')
    .option('--state-dir <path>', 'state directory (default DIR/.episodic)')
    .option('--steps', "a pipeline task's steps: phase, reason, episodes, cost and the gate being fixed")
    .option('--episodes', "list the task's episode records (logs/NAMESPACE/NAME/episodes.jsonl in the state directory)")
    .option('--audit', "the task's stop and resume decisions (status.audit) and its resume state")
    .option(
      '--review',
      "what needs a person: the plan's [!] items, new DISCOVERY.md / IDEAS.md entries (status.review)",
    )
    .option('-n, --namespace <ns>', 'namespace of NAME, with --episodes, --audit or --review', 'default')
    .option('--kubeconfig <path>', 'the AgentTasks (or with --episodes, the AgentEpisodes) of this cluster instead')
    .option('-A, --all-namespaces', 'with --kubeconfig: the tasks of every namespace')
    .action(async (first: string | undefined, second: string | undefined, opts: GetOptions) => {
      if (opts.kubeconfig !== undefined) {
        process.exitCode = await onCluster(first, opts);
        return;
      }
      const flag = opts.audit ? '--audit' : opts.review ? '--review' : '--episodes';
      if ((opts.episodes || opts.audit || opts.review) && first === undefined) {
        console.error(`episodic get: ${flag} needs the task: episodic get NAME [DIR] ${flag}`);
        process.exitCode = 2;
      } else if (opts.review) {
        process.exitCode = await getReview(first as string, second ?? '.', opts);
      } else if (opts.audit) {
        process.exitCode = await getAudit(first as string, second ?? '.', opts);
      } else if (opts.steps) {
        process.exitCode = first === undefined ? usage('--steps') : await getSteps(first, second ?? '.', opts);
      } else if (!opts.episodes && second !== undefined) {
        process.exitCode = await getCommand(second, opts, first);
      } else if (opts.episodes) {
        process.exitCode = await getEpisodes(first as string, second ?? '.', opts);
      } else {
        // One argument: a directory, or else the name of a task in the current directory.
        const named = first !== undefined && !existsSync(first);
        process.exitCode = await getCommand(named ? '.' : (first ?? '.'), opts, named ? first : undefined);
      }
    });
}

/** `get [NAME] --kubeconfig P [--episodes]`: the same tables from the cluster (loaded only then). */
async function onCluster(name: string | undefined, opts: GetOptions): Promise<number> {
  if (!validOutput(opts.output)) return 2;
  const localOnly = opts.steps ? '--steps' : opts.audit ? '--audit' : opts.review ? '--review' : undefined;
  if (localOnly) {
    console.error(
      `episodic get: ${localOnly} reads the local state; on a cluster: kubectl get at ${name ?? 'NAME'} -o yaml`,
    );
    return 2;
  }
  if (opts.episodes && name === undefined) return usage('--episodes');
  const { getEpisodesOnCluster, getTasksOnCluster } = await import('./get-cluster.ts');
  const cluster = { ...opts, kubeconfig: opts.kubeconfig as string };
  return opts.episodes ? getEpisodesOnCluster(name as string, cluster) : getTasksOnCluster(cluster, name);
}

function usage(flag: string): number {
  console.error(`episodic get: ${flag} needs the task: episodic get NAME [DIR] ${flag}`);
  return 2;
}

function validOutput(output: string): boolean {
  if (['table', 'wide', 'json', 'yaml'].includes(output)) return true;
  console.error(`episodic get: --output: "${output}" is not one of table, wide, json, yaml`);
  return false;
}

/** The tasks of DIR with their status; with `name`, that one task (-o json/yaml: the object, not a List). */
export async function getCommand(
  dirArg: string,
  opts: { output: string; stateDir?: string; namespace?: string },
  name?: string,
): Promise<number> {
  if (!validOutput(opts.output)) return 2;
  const dir = resolve(dirArg);
  let state: LocalState;
  try {
    state = await readLocalState(dir, resolveStateDir(dir, opts.stateDir));
  } catch (err) {
    console.error(`episodic get: ${(err as Error).message}`);
    return 2;
  }
  for (const e of state.specErrors) console.error(printable(e));
  const picked = state.items.filter(
    ({ task }) => name === undefined || (task.name === name && task.namespace === (opts.namespace ?? 'default')),
  );
  if (name !== undefined && picked.length === 0) {
    console.error(`episodic get: no AgentTask ${opts.namespace ?? 'default'}/${name} in ${dir}`);
    return 1;
  }
  const items = picked.map(({ task, status, generation }) => {
    const metadata = { ...(task.manifest.metadata as object), name: task.name, namespace: task.namespace, generation };
    return { task, status, manifest: { ...task.manifest, metadata, status } };
  });
  if (opts.output === 'json' || opts.output === 'yaml') {
    const list = name ? items[0].manifest : { apiVersion: 'v1', kind: 'List', items: items.map((i) => i.manifest) };
    if (opts.output === 'json') process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
    else process.stdout.write(yamlLib().stringify(list));
    return 0;
  }
  const wide = opts.output === 'wide';
  const stateDir = resolveStateDir(dir, opts.stateDir);
  const inputs = await Promise.all(
    items.map(async ({ task, status }) => ({
      namespace: task.namespace,
      name: task.name,
      spec: task.spec,
      labels: task.labels,
      status,
      // The first record is read only for -o wide's STARTED.
      started: wide ? taskStarted((await readEpisodes(stateDir, task.namespace, task.name))[0], status) : undefined,
    })),
  );
  const { header, rows } = taskTable(inputs, wide);
  // Why each task is where it is, in one line a terminal shows whole; -o wide gives the message uncut.
  const fitted = wide ? rows : fitLastColumn(header, rows, terminalColumns());
  if (rows.length === 0) console.error(`No AgentTasks found in ${dir}.`);
  else process.stdout.write(`${formatTable(header, fitted)}\n`);
  // One pipeline task: its steps under the row (as `--steps` lists them).
  if (name !== undefined && (items[0].task.spec?.steps || items[0].status.step))
    process.stdout.write(`\n${stepTable(items[0].task.spec, items[0].status)}\n`);
  // One stack task: its top frames under the row.
  const stack = name !== undefined ? stackLines(items[0].task.spec, items[0].status) : [];
  if (stack.length > 0) process.stdout.write(`\n${stack.join('\n')}\n`);
  // One task in a merge queue: where it stands there.
  const queue = name !== undefined ? integrateLines(items[0].status) : [];
  if (queue.length > 0) process.stdout.write(`\n${queue.join('\n')}\n`);
  // One task: the AgentCredentials its episodes went through.
  const credentials = name !== undefined ? credentialsLines(items[0].status) : [];
  if (credentials.length > 0) process.stdout.write(`\n${credentials.join('\n')}\n`);
  // One task: the tasks it created (spawn, forEach) under it.
  const children = name !== undefined ? childrenTable(items[0].task, state.items) : '';
  if (children) process.stdout.write(`\n${children}\n`);
  return 0;
}

/** `get NAME [DIR] --episodes`: the task's records, oldest first; -o json|yaml as AgentEpisode objects. */
async function getEpisodes(name: string, dirArg: string, opts: GetOptions): Promise<number> {
  if (!validOutput(opts.output)) return 2;
  const stateDir = resolveStateDir(dirArg, opts.stateDir);
  const path = episodesPath(stateDir, opts.namespace, name);
  const records = await readRecords(path);
  if (records.length === 0) {
    const statuses = await readStoredStatuses(stateDir);
    if (!statuses.some((r) => r.namespace === opts.namespace && r.name === name)) {
      // As on a cluster, a deleted task's records go with it; locally they are kept aside (README, State).
      const kept = lastDeletedTaskDir(stateDir, opts.namespace, name);
      const where = kept ? `; it was deleted, its episode records are kept in ${join(kept, EPISODES_FILE)}` : '';
      console.error(`episodic get: no task ${opts.namespace}/${name} on record in ${stateDir}${where}`);
      return 1;
    }
  }
  if (opts.output === 'json' || opts.output === 'yaml') {
    const list = { apiVersion: 'v1', kind: 'List', items: records.map((r) => agentEpisode(opts.namespace, r)) };
    process.stdout.write(opts.output === 'json' ? `${JSON.stringify(list, null, 2)}\n` : yamlLib().stringify(list));
    return 0;
  }
  if (records.length === 0) {
    console.error(`No episode records for ${opts.namespace}/${name} yet (${path}).`);
    return 0;
  }
  const { header, rows } = episodeTable(records, opts.output === 'wide');
  const rejected = opsRejectedLines(records);
  process.stdout.write(`${formatTable(header, rows)}\n${rejected.length > 0 ? `\n${rejected.join('\n')}\n` : ''}`);
  return 0;
}

/** The task's stored status, or undefined after saying on stderr that there is none. */
async function storedStatusOf(name: string, dirArg: string, opts: GetOptions): Promise<AgentTaskStatus | undefined> {
  const stateDir = resolveStateDir(dirArg, opts.stateDir);
  const records = await readStoredStatuses(stateDir);
  const status = records.find((r) => r.namespace === opts.namespace && r.name === name)?.status;
  if (!status) console.error(`episodic get: no task ${opts.namespace}/${name} on record in ${stateDir}`);
  return status;
}

/** `get NAME [DIR] --audit`: who stopped and resumed the task, and why (status.audit, oldest first). */
async function getAudit(name: string, dirArg: string, opts: GetOptions): Promise<number> {
  if (!validOutput(opts.output)) return 2;
  const status = await storedStatusOf(name, dirArg, opts);
  if (!status) return 1;
  const view = { phase: status.phase, reason: status.reason, resume: status.resume, audit: status.audit ?? [] };
  if (opts.output === 'json' || opts.output === 'yaml') {
    process.stdout.write(opts.output === 'json' ? `${JSON.stringify(view, null, 2)}\n` : yamlLib().stringify(view));
    return 0;
  }
  const r = status.resume;
  const summary = [
    `${opts.namespace}/${name}: ${status.phase ?? 'Pending'}${status.reason ? ` (${status.reason})` : ''}`,
  ];
  if (r)
    summary.push(
      `auto-resumes ${r.autoResumes}, episodes granted ${r.grantedEpisodes}${r.nextAutoResumeAt ? `, next auto-resume ${r.nextAutoResumeAt}` : ''}${r.heldBy ? `, held by ${r.heldBy}` : ''}`,
    );
  process.stdout.write(`${summary.join('; ')}\n`);
  if (view.audit.length === 0) return 0;
  const rows = view.audit.map((a) => [a.at.replace(/\.\d+Z$/, 'Z'), a.action, a.by, a.reason ?? '', a.message]);
  process.stdout.write(`${formatTable(['AT', 'ACTION', 'BY', 'REASON', 'MESSAGE'], rows)}\n`);
  return 0;
}

/** `get NAME [DIR] --review`: what needs a person (status.review), or "nothing needs review". */
async function getReview(name: string, dirArg: string, opts: GetOptions): Promise<number> {
  if (!validOutput(opts.output)) return 2;
  const status = await storedStatusOf(name, dirArg, opts);
  if (!status) return 1;
  if (opts.output === 'json' || opts.output === 'yaml') {
    const view = { phase: status.phase, review: status.review ?? null };
    process.stdout.write(opts.output === 'json' ? `${JSON.stringify(view, null, 2)}\n` : yamlLib().stringify(view));
    return 0;
  }
  process.stdout.write(`${reviewLines(`${opts.namespace}/${name}`, status).join('\n')}\n`);
  return 0;
}

/** A person's view of status.review: a header line, then one line per item (text printable, as kept). */
export function reviewLines(task: string, status: AgentTaskStatus): string[] {
  const review = status.review;
  const phase = `${status.phase ?? 'Pending'}${status.reason ? ` (${status.reason})` : ''}`;
  if (!review || reviewCount(review) === 0) return [`${task}: ${phase}; nothing needs review`];
  const lines = [`${task}: ${phase}; ${reviewWords(review, 'the plan')}`];
  for (const text of review.flagged) lines.push(`  [!] ${printable(text)}`);
  if (review.flaggedMore > 0) lines.push(`  … ${review.flaggedMore} more [!] items`);
  for (const e of review.entries) lines.push(`  ${e.file} (episode ${e.episode}): ${printable(e.text)}`);
  if (review.entriesMore > 0) lines.push(`  … ${review.entriesMore} more new entries`);
  return lines;
}

/** A record as the cluster has it (`kubectl get ae NAME-ep-N -o yaml`), so scripts read both the same way. */
function agentEpisode(namespace: string, record: EpisodeRecord): object {
  const labels = { [TASK_LABEL]: record.task, [EPISODE_LABEL]: String(record.number) };
  // The cluster's name (AgentEpisodes are named like episode pods): one name per episode in both modes.
  return {
    apiVersion: API_VERSION,
    kind: EPISODE_KIND,
    metadata: { name: episodePodName(record.task, record.number), namespace, labels },
    record,
  };
}
