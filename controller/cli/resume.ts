// `episodic resume NAME [DIR]`: a person resumes a NeedsReview task. Locally it writes a request into the
// state directory (a running `episodic run` picks it up, or the next one does); with --kubeconfig it sets
// the episodic.dev/resume annotation. Neither edits the spec: the controller records the handled token.
import { randomUUID } from 'node:crypto';
import { resolveStateDir } from '../util/state-layout.ts';
import type { Command } from 'commander';
import { MAX_GRANT, RESUME_ANNOTATION } from '../api/resume.ts';
import type { NewResumeRequest } from '../api/resume.ts';
import { requestLocalResume } from '../sources/local/resume-requests.ts';
import { parseNumberOption, UsageError } from './options.ts';
import { userName } from './task-target.ts';

interface ResumeOptions {
  stateDir?: string;
  episodes?: string;
  namespace: string;
  kubeconfig?: string;
  by?: string;
}

export function registerResume(program: Command): void {
  program
    .command('resume')
    .description(
      'resume a NeedsReview task: locally through the state directory, on a cluster with --kubeconfig (the episodic.dev/resume annotation)',
    )
    .argument('<name>', 'the task')
    .argument('[dir]', 'local: directory of AgentTask YAML files (default .)', '.')
    .option('--state-dir <path>', 'local: state directory (default DIR/.episodic)')
    .option('--episodes <n>', 'grant N more episodes on top of limits.maxEpisodes')
    .option('-n, --namespace <ns>', 'namespace of the task', 'default')
    .option('--kubeconfig <path>', 'resume the AgentTask on this cluster instead')
    .option('--by <who>', 'recorded in the audit trail (default: your user name)')
    .action(async (name: string, dir: string, opts: ResumeOptions) => {
      process.exitCode = await resumeCommand(name, dir, opts);
    });
}

export async function resumeCommand(name: string, dirArg: string, opts: ResumeOptions): Promise<number> {
  let episodes: number | undefined;
  try {
    episodes =
      opts.episodes === undefined
        ? undefined
        : parseNumberOption('--episodes', opts.episodes, { integer: true, min: 1 });
    if (episodes !== undefined && episodes > MAX_GRANT) throw new UsageError(`--episodes: at most ${MAX_GRANT}`);
  } catch (err) {
    console.error(`episodic resume: ${(err as Error).message}`);
    return 2;
  }
  const token = randomUUID();
  const by = (opts.by ?? userName('unknown')).slice(0, 128);
  return opts.kubeconfig !== undefined
    ? resumeOnCluster(name, opts.namespace, opts.kubeconfig, { token, by, episodes })
    : resumeLocally(name, dirArg, opts, { token, by, episodes });
}

async function resumeLocally(
  name: string,
  dirArg: string,
  opts: ResumeOptions,
  request: NewResumeRequest,
): Promise<number> {
  const stateDir = resolveStateDir(dirArg, opts.stateDir);
  const outcome = requestLocalResume(stateDir, opts.namespace, name, request);
  if (!outcome.ok) {
    console.error(`episodic resume: ${outcome.message}`);
    return 1;
  }
  const { path, reason } = outcome;
  const grant = request.episodes ? `, ${request.episodes} more episodes` : '';
  console.log(`resume requested for ${opts.namespace}/${name} (${reason}; token ${request.token}${grant}) in ${path}`);
  console.log('a running `episodic run` picks it up within a second; otherwise the next `episodic run` does');
  return 0;
}

async function resumeOnCluster(
  name: string,
  namespace: string,
  kubeconfig: string,
  request: NewResumeRequest,
): Promise<number> {
  const { loadKubeConfig } = await import('../kube/kube-config.ts');
  const { KubeClient, isStatus } = await import('../kube/kube-client.ts');
  const { requestClusterResume } = await import('../sources/cluster/resume-annotations.ts');
  let client: Awaited<ReturnType<typeof KubeClient.create>> | undefined;
  try {
    client = await KubeClient.create(await loadKubeConfig(kubeconfig), { userAgent: 'episodic-resume' });
    await requestClusterResume(client, namespace, name, request);
  } catch (err) {
    const detail = isStatus(err, 404) ? `AgentTask ${namespace}/${name} not found` : (err as Error).message;
    console.error(`episodic resume: ${detail}`);
    return 1;
  } finally {
    client?.close();
  }
  const grant = request.episodes ? `, ${request.episodes} more episodes` : '';
  console.log(
    `resume requested for ${namespace}/${name} (annotation ${RESUME_ANNOTATION}=${request.token}${grant}); status.resume.handledToken shows when the controller took it`,
  );
  return 0;
}
