// After a local episode: its evidence, scope and checkpoint (evidence/settle.ts, as the runner does in a pod),
// and for a `workspace.git` clone the push. The clone outlives the episode here, so a failed push only
// warns: the commit stays in the clone and the next episode's update and push carry it.
import type { Logger } from 'pino';
import type { AgentTaskSpec } from '../../api/agent-task.ts';
import type { EpisodeResult } from '../../api/episode-result.ts';
import type { SpecFileTask } from '../../core/ports.ts';
import { alwaysAllowed } from '../../reconciler/scope.ts';
import type { CheckpointOutcome } from '../evidence/checkpoint.ts';
import type { ReviewSnapshot } from '../evidence/review.ts';
import type { ScopeBaseline } from '../evidence/scope-guard.ts';
import { settleEpisode } from '../evidence/settle.ts';
import type { WorkspaceSnapshot } from '../evidence/workspace.ts';
import { pushLocalGitWorkspace } from './git-workspace.ts';
import { gitWorkspaceOf } from '../../api/git-workspace.ts';

/** What of the task an episode's end needs (a recovered episode has its spec file's task, not the source's). */
export type EndedTask = Pick<SpecFileTask, 'namespace' | 'name' | 'file' | 'spec' | 'created'>;

export interface LocalEpisodeEnd {
  workspace: string;
  stateDir: string;
  task: EndedTask;
  /** The spec the episode ran with (a pipeline's current step). */
  spec: AgentTaskSpec;
  number: number;
  logger: Logger;
  before?: WorkspaceSnapshot;
  scoped?: ScopeBaseline;
  reviewBefore?: ReviewSnapshot;
}

export async function checkpointLocalEpisode(ended: EpisodeResult, ctx: LocalEpisodeEnd): Promise<CheckpointOutcome> {
  const { task, number, logger, spec } = ctx;
  const where = { namespace: task.namespace, task: task.name, episode: number };
  const checkpoint = await settleEpisode(
    {
      workspace: ctx.workspace,
      namespace: task.namespace,
      task: task.name,
      episode: number,
      completion: spec.completion,
      before: ctx.before,
      checklist: task.spec?.progress.checklist,
      reviewBefore: ctx.reviewBefore,
      scope: { scope: spec.scope, allowed: alwaysAllowed(spec), baseline: ctx.scoped },
      exclude: [ctx.stateDir],
    },
    ended,
  );
  if (checkpoint.error) logger.warn(where, checkpoint.error);
  const commit = checkpoint.result.evidence?.workspace?.commit;
  if (commit) logger.debug({ ...where, commit }, 'checkpoint');
  const git = gitWorkspaceOf(spec.workspace);
  if (git) {
    const pushed = await pushLocalGitWorkspace(ctx.stateDir, task.namespace, task.name, task.file, git).catch(
      (err: Error) => ({ ok: false as const, message: err.message }),
    );
    if (!pushed.ok) logger.warn(where, `${pushed.message}; the commit stays in the clone and goes with the next push`);
  }
  return checkpoint;
}
