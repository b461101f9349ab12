// After the agent of an episode exits, in this order, the same for a local process and the runner in a pod:
// the evidence (collect.ts), the scope judged and with Revert restored before anything is committed
// (scope-guard.ts), then the checkpoint of a git workspace, which also reads what the episode changed
// (checkpoint.ts). Evidence is best effort: an episode whose evidence could not be gathered is still recorded.
import type { AgentTaskSpec } from '../../api/agent-task.ts';
import type { EpisodeResult } from '../../api/episode-result.ts';
import type { Scope } from '../../api/scope.ts';
import { checkpointEpisode } from './checkpoint.ts';
import type { CheckpointOutcome } from './checkpoint.ts';
import { collectEvidence } from './collect.ts';
import type { ReviewSnapshot } from './review.ts';
import { enforceScope } from './scope-guard.ts';
import type { ScopeBaseline } from './scope-guard.ts';
import type { WorkspaceSnapshot } from './workspace.ts';

export interface SettleRequest {
  workspace: string;
  namespace: string;
  task: string;
  episode: number;
  completion: AgentTaskSpec['completion'];
  /** The snapshot taken before the agent started. */
  before?: WorkspaceSnapshot;
  checklist?: string;
  reviewBefore?: ReviewSnapshot;
  scope?: { scope?: Scope; allowed: readonly string[]; baseline?: ScopeBaseline };
  /** Paths never looked at nor committed (the controller's state directory inside the workspace). */
  exclude?: string[];
  /** Extra environment for git (the runner's credentials and safe.directory). */
  gitEnv?: Record<string, string>;
}

export async function settleEpisode(req: SettleRequest, ended: EpisodeResult): Promise<CheckpointOutcome> {
  const { workspace, before, checklist, reviewBefore, exclude } = req;
  const evidence = await collectEvidence(
    { workspace, before, checklist, reviewBefore, snapshot: { exclude } },
    ended,
  ).catch(() => undefined);
  let result = evidence ? { ...ended, evidence } : ended;
  if (req.scope) {
    const { scope, allowed, baseline } = req.scope;
    result = await enforceScope(workspace, scope, allowed, baseline, result, exclude ?? []);
  }
  return checkpointEpisode(result, {
    dir: workspace,
    namespace: req.namespace,
    task: req.task,
    episode: req.episode,
    completion: req.completion,
    before,
    exclude,
    env: req.gitEnv,
  });
}
