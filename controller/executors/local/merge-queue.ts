// The merge queue in local mode (core/merge-queue-loop.ts runs it): each queue's clone and journal under the
// state directory (STATE/merge-queue/QUEUE/{clone,journal.json}), the journal written atomically before each
// step; a task's remote resolved against its spec file; the queue's gates run as processes in the clone.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MergeQueuePorts, QueueJournals } from '../../core/merge-queue-ports.ts';
import type { QueueJournal } from '../../reconciler/merge-queue.ts';
import { writeFileAtomic } from '../../util/atomic-write.ts';
import { removeQuietly } from '../../util/fs.ts';
import { mergeQueueDir } from '../../util/state-layout.ts';
import { resolveGitUrl } from './git-workspace.ts';
import { runQueueGates } from './merge-queue-steps.ts';
import { localQueuePulls, type PulledTask } from './merge-queue-pulls.ts';
import type { SpecTrigger } from '../../sources/local/spec-files.ts';

/** A local task: its spec file, which a relative git URL is resolved against. */
export interface LocalQueueTask extends PulledTask {
  file: string;
}

/** `triggers`: the loaded ones, whose recorded pull requests are merged through their forge. */
export function localQueuePorts(
  stateDir: string,
  triggers: () => ReadonlyMap<string, SpecTrigger> | undefined = () => undefined,
): MergeQueuePorts<LocalQueueTask> {
  return {
    pulls: localQueuePulls(stateDir, triggers),
    journals: fileJournals(stateDir),
    cloneDir: (queue) => join(mergeQueueDir(stateDir, queue), 'clone'),
    queueOf: (task) => task.spec.integrate?.queue,
    shownName: (queue) => queue,
    remoteUrl: (task) => {
      const ws = task.spec.workspace;
      if (!ws || typeof ws !== 'object' || !('git' in ws))
        throw new Error(`${task.key}: spec.integrate needs workspace.git`);
      return resolveGitUrl(ws.git.url, task.file);
    },
    credentials: async () => undefined, // local git uses the user's own credential helpers
    gates: (queue, gates, cwd) => runQueueGates(gates, cwd, join(mergeQueueDir(stateDir, queue), 'gates.log')),
  };
}

function fileJournals(stateDir: string): QueueJournals {
  const file = (queue: string) => join(mergeQueueDir(stateDir, queue), 'journal.json');
  return {
    read(queue) {
      try {
        return JSON.parse(readFileSync(file(queue), 'utf8')) as QueueJournal;
      } catch {
        return undefined;
      }
    },
    async write(queue, j) {
      if (j) await writeFileAtomic(file(queue), `${JSON.stringify(j)}\n`);
      else removeQuietly(file(queue));
    },
  };
}
