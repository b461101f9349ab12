// Where the merge queue rebases onto, with as few fetches as a drive can do, and whether a push before a restart
// landed: the git facts core/merge-queue-loop.ts gathers for its rules.
import type { GitCredentials } from '../git/git-credentials.ts';
import * as mq from '../git/integrate-git.ts';
import type { QueueJournal } from '../reconciler/merge-queue.ts';
import { waiting } from './merge-queue-entries.ts';
import type { Place } from './merge-queue-entries.ts';
import type { QueueTask } from './merge-queue-ports.ts';

/** What one drive of a queue has seen: its tasks, `into`'s heads it fetched or pushed, branches fetched. */
export interface DriveView<T extends QueueTask> {
  members: T[];
  into: Map<string, string>;
  fetched: Set<string>;
}

/** The task being integrated, where its branch is and where it goes. */
export interface Integrand<T extends QueueTask> {
  task: T;
  url: string;
  branch: string;
  into: string;
  credentials?: GitCredentials;
}

/** After a restart at stage push: did the push land, and does the clone (maybe a new one) hold the commit? */
export async function pushLanded<T extends QueueTask>(
  clone: string,
  j: QueueJournal,
  it: Integrand<T>,
): Promise<{ intoHasRebased?: boolean; cloneHasRebased?: boolean }> {
  if (!j.rebased) return {};
  await mq.ensureClone(clone, it.url, it.credentials); // a cluster's new leader starts without one
  if (await mq.intoContains(clone, it.into, j.rebased, it.credentials)) return { intoHasRebased: true };
  return { intoHasRebased: false, cloneHasRebased: await mq.hasCommit(clone, j.rebased) };
}

/**
 * `into`'s commit to rebase onto: the one this drive fetched or pushed last; else one fetch of `into` and of
 * every waiting branch on the same remote (so the next integrations need no fetch of their own).
 */
async function onto<T extends QueueTask>(
  view: DriveView<T>,
  clone: string,
  it: Integrand<T>,
  placeOf: (t: T) => Place | undefined,
): Promise<string> {
  const known = view.into.get(it.into);
  if (known && view.fetched.has(it.branch)) return known;
  const others = view.members.filter(waiting).flatMap((t) => {
    const o = t === it.task ? undefined : placeOf(t);
    return o && o.url === it.url && o.into === it.into && !view.fetched.has(o.branch) ? [o.branch] : [];
  });
  const branches = [it.branch, ...new Set(others)];
  const head = await mq.fetchQueue(clone, it.into, branches, it.credentials);
  for (const b of branches) view.fetched.add(b);
  view.into.set(it.into, head);
  return head;
}

/** In a batch, the previous task's rebased commit (this task's branch fetched); else `into`'s (onto()). */
export async function batchOnto<T extends QueueTask>(
  view: DriveView<T>,
  clone: string,
  it: Integrand<T>,
  j: QueueJournal,
  placeOf: (t: T) => Place | undefined,
): Promise<string> {
  const previous = j.batch?.[j.batch.length - 1];
  if (!previous) return onto(view, clone, it, placeOf);
  if (!view.fetched.has(it.branch)) await onto(view, clone, it, placeOf);
  return previous.commit;
}
