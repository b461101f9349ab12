// `episodic get --kubeconfig P`: the same tables as the local `get`, from a cluster's AgentTasks and
// AgentEpisodes (one list call each; the rows are get-rows.ts's, so both modes read alike).
import { AgentTaskSpecSchema, AgentTaskStatusSchema, emptyStatus, GROUP, PLURAL, VERSION } from '../api/agent-task.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { EpisodeRecordSchema } from '../api/episode-record.ts';
import type { EpisodeRecord } from '../api/episode-record.ts';
import { taskEpisodeRecords } from '../console/cluster-source.ts';
import { KubeClient } from '../kube/kube-client.ts';
import { loadKubeConfig } from '../kube/kube-config.ts';
import { TASK_LABEL } from '../kube/names.ts';
import type { CustomObject } from '../kube/objects.ts';
import { episodesPath } from '../sinks/cluster/episode-records.ts';
import { yamlLib } from '../util/yaml-lib.ts';
import { credentialsLines, episodeTable, taskStarted, taskTable } from './get-rows.ts';
import type { TaskRowInput } from './get-rows.ts';
import { fitLastColumn, formatTable, terminalColumns } from './live-table.ts';
import { childrenTable } from './get-children.ts';
import { integrateLines } from './get-integrate.ts';

export interface ClusterGetOptions {
  kubeconfig: string;
  namespace: string;
  allNamespaces?: boolean;
  output: string;
}

async function withClient(run: (client: KubeClient) => Promise<number>, kubeconfig: string): Promise<number> {
  let client: KubeClient;
  try {
    client = await KubeClient.create(await loadKubeConfig(kubeconfig), { userAgent: 'episodic-get' });
  } catch (err) {
    console.error(`episodic get: cannot load the kubeconfig ${kubeconfig}: ${(err as Error).message}`);
    return 1;
  }
  try {
    return await run(client);
  } catch (err) {
    console.error(`episodic get: ${(err as Error).message}`);
    return 1;
  } finally {
    client.close();
  }
}

function listPath(kind: string, opts: ClusterGetOptions): string {
  const where = opts.allNamespaces ? '' : `/namespaces/${opts.namespace}`;
  return `/apis/${GROUP}/${VERSION}${where}/${kind}`;
}

/** A task's row input from its object: spec and status as the schemas read them (a bad spec shows no STEP). */
export function taskInput(obj: CustomObject, oldest?: EpisodeRecord): TaskRowInput {
  const parsed = AgentTaskStatusSchema.safeParse(obj.status ?? {});
  const status: AgentTaskStatus = parsed.success ? parsed.data : emptyStatus();
  const spec = AgentTaskSpecSchema.safeParse(obj.spec);
  return {
    namespace: obj.metadata.namespace ?? '',
    name: obj.metadata.name,
    spec: spec.success ? spec.data : undefined,
    labels: obj.metadata.labels,
    status,
    started: taskStarted(oldest, status),
  };
}

/** Each task's oldest kept record, by "namespace/task" (-o wide's STARTED). */
async function oldestRecords(client: KubeClient, opts: ClusterGetOptions): Promise<Map<string, EpisodeRecord>> {
  const list = await client.get<{ items?: Array<CustomObject & { record?: unknown }> }>(
    listPath('agentepisodes', opts),
  );
  const oldest = new Map<string, EpisodeRecord>();
  for (const item of list.items ?? []) {
    const parsed = EpisodeRecordSchema.safeParse(item.record);
    if (!parsed.success) continue;
    const key = `${item.metadata.namespace}/${item.metadata.labels?.[TASK_LABEL] ?? parsed.data.task}`;
    const kept = oldest.get(key);
    if (!kept || parsed.data.number < kept.number) oldest.set(key, parsed.data);
  }
  return oldest;
}

export function getTasksOnCluster(opts: ClusterGetOptions, name?: string): Promise<number> {
  return withClient(async (client) => {
    const list = await client.get<{ items?: CustomObject[] }>(listPath(PLURAL, opts));
    const items = (list.items ?? []).filter((o) => name === undefined || o.metadata.name === name);
    if (name !== undefined && items.length === 0) {
      console.error(`episodic get: no AgentTask ${opts.namespace}/${name} on the cluster`);
      return 1;
    }
    if (opts.output === 'json' || opts.output === 'yaml') {
      const out = name ? items[0] : { apiVersion: 'v1', kind: 'List', items };
      process.stdout.write(opts.output === 'json' ? `${JSON.stringify(out, null, 2)}\n` : yamlLib().stringify(out));
      return 0;
    }
    const wide = opts.output === 'wide';
    const oldest = wide ? await oldestRecords(client, opts) : new Map<string, EpisodeRecord>();
    const inputs = items.map((o) => taskInput(o, oldest.get(`${o.metadata.namespace}/${o.metadata.name}`)));
    const { header, rows } = taskTable(inputs, wide);
    if (rows.length === 0)
      console.error(`No AgentTasks found in ${opts.allNamespaces ? 'any namespace' : opts.namespace}.`);
    else process.stdout.write(`${formatTable(header, wide ? rows : fitLastColumn(header, rows, terminalColumns()))}\n`);
    // One task in a merge queue: where it stands there, as locally.
    const queue = name !== undefined ? integrateLines(inputs[0].status) : [];
    if (queue.length > 0) process.stdout.write(`\n${queue.join('\n')}\n`);
    const credentials = name !== undefined ? credentialsLines(inputs[0].status) : [];
    if (credentials.length > 0) process.stdout.write(`\n${credentials.join('\n')}\n`);
    // One task: the tasks it created (spawn, forEach, attempts) under it, as locally.
    const all = (list.items ?? []).map((o) => taskInput(o)).map((task) => ({ task, status: task.status }));
    const children = name !== undefined ? childrenTable(inputs[0], all) : '';
    if (children) process.stdout.write(`\n${children}\n`);
    return 0;
  }, opts.kubeconfig);
}

export function getEpisodesOnCluster(name: string, opts: ClusterGetOptions): Promise<number> {
  return withClient(async (client) => {
    const records = await taskEpisodeRecords(client, opts.namespace, name);
    if (opts.output === 'json' || opts.output === 'yaml') {
      const list = await client.get<object>(episodesPath(opts.namespace), { labelSelector: `${TASK_LABEL}=${name}` });
      process.stdout.write(opts.output === 'json' ? `${JSON.stringify(list, null, 2)}\n` : yamlLib().stringify(list));
      return 0;
    }
    if (records.length === 0) {
      console.error(`No episode records for ${opts.namespace}/${name} on the cluster.`);
      return 0;
    }
    const { header, rows } = episodeTable(records, opts.output === 'wide');
    process.stdout.write(`${formatTable(header, rows)}\n`);
    return 0;
  }, opts.kubeconfig);
}
