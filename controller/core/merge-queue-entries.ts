// What the merge queue's loop tells its rules (reconciler/merge-queue.ts) about each task: whether it waits,
// when it entered the queue, and the lane it may share a push in (a batch).
import type { QueueEntry } from '../reconciler/merge-queue.ts';
import type { QueuePulls, QueueTask } from './merge-queue-ports.ts';
import { gitWorkspaceOf } from '../api/git-workspace.ts';

/** A Succeeded task the queue has not finished with. */
export function waiting(t: QueueTask): boolean {
  const r = t.status.integrate?.result;
  return t.status.phase === 'Succeeded' && r !== 'integrated' && r !== 'needsReview';
}

export function entryOf<T extends QueueTask>(t: T, pulls?: QueuePulls<T>): QueueEntry {
  // Best-of-N's task runs no episode of its own: it is as old as its winning attempt's end.
  const winner = t.status.attempts?.candidates.find((c) => c.number === t.status.attempts?.winner);
  const awaiting = pulls?.of(t) === 'awaiting' ? { awaitingPull: true } : {};
  return { key: t.key, enqueuedAt: t.status.lastEpisode?.finishedAt ?? winner?.finishedAt ?? '', ...awaiting };
}

/**
 * Its entry with its lane: tasks pushed to the same remote and `into` without queue gates share one. A task
 * with a pull request (merged through the forge's API) or awaiting one gets none: it is a batch of one.
 */
export function batchEntryOf<T extends QueueTask>(
  t: T,
  place: { url: string; into: string } | undefined,
  pulls?: QueuePulls<T>,
): QueueEntry {
  const pushed = (t.spec.integrate?.gates ?? []).length === 0 && pulls?.of(t) === undefined;
  return { ...entryOf(t, pulls), ...(pushed && place ? { lane: `${place.url}\n${place.into}` } : {}) };
}

/** Where a task's branch is and where it goes: its remote as git is given it, its branch, `into`. */
export interface Place {
  url: string;
  branch: string;
  into: string;
}

export function placeOf(task: QueueTask, url: string): Place {
  const git = gitWorkspaceOf(task.spec.workspace);
  if (!git || !task.spec.integrate) throw new Error(`${task.key}: spec.integrate needs workspace.git`);
  const strip = (r: string) => r.replace(/^refs\/heads\//, '');
  return { url, branch: strip(git.ref), into: strip(task.spec.integrate.into) };
}

export function placeOrNot<T extends QueueTask>(task: T, remoteUrl: (t: T) => string): Place | undefined {
  try {
    return placeOf(task, remoteUrl(task));
  } catch {
    return undefined;
  }
}
