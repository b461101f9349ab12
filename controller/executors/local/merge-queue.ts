// The merge queue in local mode (core/merge-queue-loop.ts runs it): each queue's clone and journal under the
// state directory (STATE/merge-queue/QUEUE/{clone,journal.json}), the journal written atomically before each
// step; a task's remote resolved against its spec file; the queue's gates run as processes in the clone.
import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Gate, GateRun } from '../../api/gates.ts';
import type { MergeQueuePorts, QueueJournals, QueueTask } from '../../core/merge-queue-ports.ts';
import type { QueueJournal } from '../../reconciler/merge-queue.ts';
import { writeFileAtomic } from '../../util/atomic-write.ts';
import { removeQuietly } from '../../util/fs.ts';
import { mergeQueueDir } from '../../util/state-layout.ts';
import { resolveGitUrl } from './git-workspace.ts';
import { runQueueGates } from '../process/queue-gates.ts';
import { gitWorkspaceOf } from '../../api/git-workspace.ts';
import { localQueuePulls } from './merge-queue-pulls.ts';
import type { SpecTrigger } from '../../sources/local/spec-files.ts';

/** A local task: its spec file, which a relative git URL is resolved against. */
export interface LocalQueueTask extends QueueTask {
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
      const git = gitWorkspaceOf(task.spec.workspace);
      if (!git) throw new Error(`${task.key}: spec.integrate needs workspace.git`);
      return resolveGitUrl(git.url, task.file);
    },
    credentials: async () => undefined, // local git uses the user's own credential helpers
    gates: (queue, _task, gates, cwd) => gatesLogged(gates, cwd, join(mergeQueueDir(stateDir, queue), 'gates.log')),
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

/** The gates' output appended to the queue's gates.log. */
async function gatesLogged(gates: readonly Gate[], cwd: string, logFile: string): Promise<GateRun[]> {
  mkdirSync(dirname(logFile), { recursive: true });
  const fd = openSync(logFile, 'a');
  try {
    return await runQueueGates(gates, cwd, (chunk) => writeSync(fd, chunk));
  } finally {
    closeSync(fd);
  }
}
