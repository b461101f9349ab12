// `episodic suspend NAME [DIR]` / `episodic unsuspend NAME [DIR]`: a person's suspend hold (api/hold.ts), the
// same one the console's Suspend/Unsuspend sets. Locally a file in the state directory (a running `episodic
// run` picks it up); with --kubeconfig the episodic.dev/suspended annotation. Neither edits the spec, so
// unsuspend cannot lift spec.suspend: true.
import type { Command } from 'commander';
import type { SuspendHold } from '../api/hold.ts';
import { findLocalTask, userName } from './task-target.ts';

interface SuspendOptions {
  stateDir?: string;
  namespace: string;
  kubeconfig?: string;
  by?: string;
}

export const registerSuspend = (program: Command) => registerHoldCommand(program, true);
export const registerUnsuspend = (program: Command) => registerHoldCommand(program, false);

function registerHoldCommand(program: Command, suspended: boolean): void {
  const verb = suspended ? 'suspend' : 'unsuspend';
  program
    .command(verb)
    .description(
      suspended
        ? 'suspend a task with a hold (not spec): locally in the state directory, on a cluster with --kubeconfig (the episodic.dev/suspended annotation)'
        : 'lift the suspend hold that `episodic suspend` or the console set (spec.suspend: true stays in force)',
    )
    .argument('<name>', 'the task')
    .argument('[dir]', 'local: directory of AgentTask YAML files (default .)', '.')
    .option('--state-dir <path>', 'local: state directory (default DIR/.episodic)')
    .option('-n, --namespace <ns>', 'namespace of the task', 'default')
    .option('--kubeconfig <path>', 'the AgentTask on this cluster instead')
    .option('--by <who>', 'recorded in the audit trail (default: your user name)')
    .action(async (name: string, dir: string, opts: SuspendOptions) => {
      process.exitCode = await suspendCommand(name, dir, opts, suspended);
    });
}

export async function suspendCommand(
  name: string,
  dirArg: string,
  opts: SuspendOptions,
  suspended: boolean,
): Promise<number> {
  const verb = suspended ? 'suspend' : 'unsuspend';
  const hold = { suspended, by: (opts.by ?? userName('unknown')).slice(0, 128) };
  const outcome =
    opts.kubeconfig !== undefined
      ? await onCluster(name, opts.namespace, opts.kubeconfig, hold)
      : await locally(name, dirArg, opts, hold);
  if (!outcome.ok) {
    console.error(`episodic ${verb}: ${outcome.message}`);
    return 1;
  }
  const what = suspended ? `suspend hold set on` : 'suspend hold lifted from';
  console.log(`${what} ${opts.namespace}/${name} by ${hold.by} (${outcome.where})`);
  if (!suspended && outcome.specSuspend)
    console.log('spec.suspend is true: the task stays suspended until its spec says otherwise');
  if (outcome.local)
    console.log('a running `episodic run` picks it up within a second; otherwise the next `episodic run` does');
  return 0;
}

type Outcome = { ok: true; where: string; specSuspend: boolean; local: boolean } | { ok: false; message: string };

async function locally(name: string, dirArg: string, opts: SuspendOptions, hold: SuspendHold): Promise<Outcome> {
  const { setLocalHold } = await import('../sources/local/hold-files.ts');
  const { dir, stateDir, task } = await findLocalTask(dirArg, opts.stateDir, opts.namespace, name);
  const outcome = setLocalHold(stateDir, { namespace: opts.namespace, name, known: task !== undefined }, hold);
  if (!outcome.ok) return { ok: false, message: `${outcome.message} in ${dir}` };
  return { ok: true, where: outcome.path, specSuspend: task?.spec?.suspend === true, local: true };
}

async function onCluster(name: string, namespace: string, kubeconfig: string, hold: SuspendHold): Promise<Outcome> {
  const { loadKubeConfig } = await import('../kube/kube-config.ts');
  const { KubeClient } = await import('../kube/kube-client.ts');
  const { setClusterHold } = await import('../sources/cluster/hold-annotations.ts');
  const { taskPath } = await import('../kube/names.ts');
  const client = await KubeClient.create(await loadKubeConfig(kubeconfig), { userAgent: 'episodic-suspend' });
  try {
    const outcome = await setClusterHold(client, namespace, name, hold);
    if (!outcome.ok) return outcome;
    const obj = await client.get<{ spec?: { suspend?: unknown } }>(taskPath(namespace, name));
    return {
      ok: true,
      where: 'annotation episodic.dev/suspended',
      specSuspend: obj.spec?.suspend === true,
      local: false,
    };
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  } finally {
    client.close();
  }
}
