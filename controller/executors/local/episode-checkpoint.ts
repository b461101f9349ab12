// After a local episode: the checkpoint commit of a git workspace it changed, and for a `workspace.git`
// clone the push, as the runner does in a pod. The clone outlives the episode here, so a failed push only
// warns: the commit stays in the clone and the next episode's update and push carry it.
import type { Logger } from 'pino';
import type { EpisodeResult } from '../../api/episode-result.ts';
import type { SpecFileTask } from '../../core/ports.ts';
import { checkpointEpisode } from '../evidence/checkpoint.ts';
import { pushLocalGitWorkspace } from './git-workspace.ts';

export async function checkpointLocalEpisode(
  result: EpisodeResult,
  ctx: { workspace: string; stateDir: string; task: SpecFileTask; number: number; logger: Logger },
): Promise<EpisodeResult> {
  const { task, number, logger } = ctx;
  const spec = task.spec;
  if (!spec) return result;
  const where = { namespace: task.namespace, task: task.name, episode: number };
  const checkpoint = await checkpointEpisode(result, {
    dir: ctx.workspace,
    namespace: task.namespace,
    task: task.name,
    episode: number,
    completion: spec.completion,
    exclude: [ctx.stateDir],
  });
  if (checkpoint.error) logger.warn(where, checkpoint.error);
  const commit = checkpoint.result.evidence?.workspace?.commit;
  if (commit) logger.debug({ ...where, commit }, 'checkpoint');
  const ws = spec.workspace;
  if (ws && typeof ws === 'object' && 'git' in ws) {
    const pushed = await pushLocalGitWorkspace(ctx.stateDir, task.namespace, task.name, task.file, ws.git).catch(
      (err: Error) => ({ ok: false as const, message: err.message }),
    );
    if (!pushed.ok) logger.warn(where, `${pushed.message}; the commit stays in the clone and goes with the next push`);
  }
  return checkpoint.result;
}
