// The local state directory's layout, every path in one place: a new state file is added here, and a reader
// (CLI, console, controller) can never disagree with the writer about where it is.
//
//   STATE/lock, id, controller.log          the running controller: its lock, identity and log
//   STATE/status/NS/NAME.json               a task's status (sinks/local/file-status.ts)
//   STATE/logs/NS/NAME/                     its episode logs (episode-N.log), records (episodes.jsonl), prompt scratch
//   STATE/deleted/NS/NAME/TIME/             a deleted task's logs and records, kept
//   STATE/workspaces/NS/NAME/               a git workspace's clone, a created task's directory
//   STATE/mailboxes/NS/TASK/ID.json         a task's messages
//   STATE/resume/NS/NAME.json               a resume request;  STATE/suspend/NS/NAME.json  a suspend hold
//   STATE/triggers/NS/NAME.json             a trigger's status
//   STATE/created/NS/NAME.yaml              a created task's spec (triggers, spawned children)
//   STATE/budgets/NS/NAME.json              an AgentBudget's status
//   STATE/blackboard/NS.json                a namespace's blackboard
//   STATE/sandbox/NS/NAME/home/             a sandboxed task's own $HOME, kept between its episodes
//   STATE/credentials/NS/NAME.json          an AgentCredentials' status: its credentials' pauses and totals
//   STATE/merge-queue/QUEUE/                a merge queue's clone, journal, resolution logs
import { join, resolve } from 'node:path';

/** The state directory's name inside the spec directory when --state-dir is not given. */
export const DEFAULT_STATE_DIR_NAME = '.episodic';
export const EPISODES_FILE = 'episodes.jsonl';

/** --state-dir as given, else DIR/.episodic; absolute either way. */
export function resolveStateDir(specDir: string, stateDirOption?: string): string {
  return resolve(stateDirOption ?? join(specDir, DEFAULT_STATE_DIR_NAME));
}

export const lockPath = (stateDir: string): string => join(stateDir, 'lock');
export const controllerIdPath = (stateDir: string): string => join(stateDir, 'id');
export const controllerLogPath = (stateDir: string): string => join(stateDir, 'controller.log');

export const statusDir = (stateDir: string): string => join(stateDir, 'status');
export const statusPath = (stateDir: string, namespace: string, name: string): string =>
  join(statusDir(stateDir), namespace, `${name}.json`);

export const taskLogsDir = (stateDir: string, namespace: string, name: string): string =>
  join(stateDir, 'logs', namespace, name);
export const episodeLogPath = (stateDir: string, namespace: string, name: string, episode: number): string =>
  join(taskLogsDir(stateDir, namespace, name), `episode-${episode}.log`);
/** The episode number of a file name in a task's logs directory, if it is an episode log. */
export function episodeOfLogFile(file: string): number | undefined {
  const n = /^episode-(\d+)\.log$/.exec(file)?.[1];
  return n === undefined ? undefined : Number(n);
}
/** The prompt scratch file (promptVia stdin/file): one task runs one episode at a time, so they share it. */
export const promptScratchPath = (stateDir: string, namespace: string, name: string): string =>
  join(taskLogsDir(stateDir, namespace, name), '.prompt.md');
export const episodesPath = (stateDir: string, namespace: string, name: string): string =>
  join(taskLogsDir(stateDir, namespace, name), EPISODES_FILE);

/** All the kept directories of one deleted task, one per deletion. */
export const deletedTaskRoot = (stateDir: string, namespace: string, name: string): string =>
  join(stateDir, 'deleted', namespace, name);
/** One deletion's directory: a task may be created and deleted again under the same name. */
export const deletedTaskDir = (stateDir: string, namespace: string, name: string, at: Date): string =>
  join(deletedTaskRoot(stateDir, namespace, name), at.toISOString().replace(/:/g, '-'));

export const workspacesDir = (stateDir: string): string => join(stateDir, 'workspaces');
export const stateWorkspaceDir = (stateDir: string, namespace: string, name: string): string =>
  join(workspacesDir(stateDir), namespace, name);

export const mailboxesDir = (stateDir: string): string => join(stateDir, 'mailboxes');
export const mailboxDir = (stateDir: string, namespace: string, task: string): string =>
  join(mailboxesDir(stateDir), namespace, task);

export const resumeDir = (stateDir: string): string => join(stateDir, 'resume');
export const resumeRequestPath = (stateDir: string, namespace: string, name: string): string =>
  join(resumeDir(stateDir), namespace, `${name}.json`);
export const holdDir = (stateDir: string): string => join(stateDir, 'suspend');
export const holdPath = (stateDir: string, namespace: string, name: string): string =>
  join(holdDir(stateDir), namespace, `${name}.json`);

export const triggerStatusDir = (stateDir: string): string => join(stateDir, 'triggers');
export const triggerStatusPath = (stateDir: string, namespace: string, name: string): string =>
  join(triggerStatusDir(stateDir), namespace, `${name}.json`);

export const createdDir = (stateDir: string): string => join(stateDir, 'created');
export const createdSpecPath = (stateDir: string, namespace: string, name: string): string =>
  join(createdDir(stateDir), namespace, `${name}.yaml`);

export const budgetsDir = (stateDir: string): string => join(stateDir, 'budgets');
export const budgetPath = (stateDir: string, namespace: string, name: string): string =>
  join(budgetsDir(stateDir), namespace, `${name}.json`);

export const credentialsStatusPath = (stateDir: string, namespace: string, name: string): string =>
  join(stateDir, 'credentials', namespace, `${name}.json`);

export const blackboardDir = (stateDir: string): string => join(stateDir, 'blackboard');
export const blackboardPath = (stateDir: string, namespace: string): string =>
  join(blackboardDir(stateDir), `${namespace}.json`);

export const sandboxHomePath = (stateDir: string, namespace: string, name: string): string =>
  join(stateDir, 'sandbox', namespace, name, 'home');

export const mergeQueueDir = (stateDir: string, queue: string): string => join(stateDir, 'merge-queue', queue);
