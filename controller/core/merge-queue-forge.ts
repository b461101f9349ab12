// The merge queue's last step for a task with a pull request (issue 32 §3): the forge, not a push, moves
// `into`. The forge is asked first whether the PR is merged already, so a step redone after a kill -9 (or
// after an answer lost on the way) never merges twice; then the PR's head is leased to the rebased commit
// and the forge merges it without a merge commit (Gitea fast-forward-only, GitHub rebase, both pinned to that
// head). A refusal is an outcome the rule turns into NeedsReview (unless `into` moved: then it is rebased
// again); an outage throws and is retried.
import type { GitCredentials } from '../git/git-credentials.ts';
import { fastForwards, pushPullHead } from '../git/integrate-git.ts';
import type { QueueJournal, StepOutcome } from '../reconciler/merge-queue.ts';
import type { QueuePull, QueuePulls, QueueTask } from './merge-queue-ports.ts';

export interface ForgeMergeInput {
  clone: string;
  journal: QueueJournal;
  /** The task's branch: the PR's head. */
  branch: string;
  into: string;
  pull: QueuePull;
  credentials?: GitCredentials;
}

/** The merge step of `task` (the loop's): its PR opened through the mode's port, then mergeThroughForge. */
export async function mergeStep<T extends QueueTask>(
  pulls: QueuePulls<T> | undefined,
  task: T,
  m: Omit<ForgeMergeInput, 'pull'>,
): Promise<StepOutcome> {
  if (!pulls) throw new Error(`${task.key}: a merge step without a pull request port`);
  return mergeThroughForge({ ...m, pull: await pulls.open(task) });
}

export async function mergeThroughForge(m: ForgeMergeInput): Promise<StepOutcome> {
  const { number, forge } = m.pull;
  const rebased = m.journal.rebased as string;
  const refused = (reason: string): StepOutcome => ({ step: 'merge', kind: 'refused', pull: number, reason });
  const state = await forge.pullMergeState(number);
  if (state.state === 'merged') return { step: 'merge', kind: 'merged', pull: number, commit: state.mergeCommit };
  if (state.state === 'closed') return refused('the pull request is closed');
  if ((await pushPullHead(m.clone, rebased, m.branch, m.credentials)) === 'moved') {
    return refused(`its head branch ${m.branch} moved since the queue fetched it`);
  }
  // `into` moved since the rebase (the forge will not fast-forward it): rebased again, as a rejected push is.
  // Asked before the call too: Gitea answers a move between the two with a 500, an outage retried next pass.
  const moved = async () => !(await fastForwards(m.clone, m.into, rebased, m.credentials));
  if (await moved()) return { step: 'merge', kind: 'rejected' };
  const answer = await forge.mergePullRequest(number, rebased);
  if (answer.kind === 'refused' && (await moved())) return { step: 'merge', kind: 'rejected' };
  if (answer.kind === 'refused') return refused(answer.reason);
  return { step: 'merge', kind: 'merged', pull: number, commit: answer.commit ?? rebased };
}

/** The decision's fact for the task integrating: its pull request, if it has one (merged through the forge). */
export function pullFact<T extends QueueTask>(task: T | undefined, pulls?: QueuePulls<T>): { pull?: number } {
  const pr = task && pulls?.of(task);
  return typeof pr === 'object' ? { pull: pr.number } : {};
}
