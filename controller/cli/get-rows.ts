// The rows of `episodic get` and `episodic get NAME --episodes`, the same from the local state and from a
// cluster: pure functions of a task (spec, labels, status) or of its episode records.
import { opsCell } from './get-ops.ts';
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import { totalTokens } from '../api/bounds.ts';
import { TRIGGER_LABEL } from '../api/agent-trigger.ts';
import { countedUSD } from '../api/episode-record.ts';
import type { EpisodeRecord } from '../api/episode-record.ts';
import type { GateRun } from '../api/gates.ts';
import { OWNER_LABELS } from '../api/spawn-fields.ts';
import { durationBetween } from './elapsed.ts';
import { gateSummary } from './get-steps.ts';
import { isStackTask, stackDepth } from './get-stack.ts';

export interface TaskRowInput {
  namespace: string;
  name: string;
  spec?: AgentTaskSpec;
  labels?: Record<string, string>;
  status: AgentTaskStatus;
  /** When its first episode started (its oldest record kept, or the one running); -o wide only. */
  started?: string;
}

/** Seconds are enough in a table: "2026-12-02T00:36:12.307Z" → "2026-12-02T00:36:12Z". */
export function shortTime(at: string | undefined): string {
  return at?.replace(/\.\d+Z$/, 'Z') ?? '';
}

/** The task's first start: its oldest kept record's, else the running episode's. */
export function taskStarted(oldest: EpisodeRecord | undefined, status: AgentTaskStatus): string | undefined {
  return oldest?.startedAt ?? status.currentEpisode?.startedAt;
}

/** Header and rows of `get`: STEP, GATE and STACK only when a task has them; -o wide adds TRIGGER and STARTED. */
export function taskTable(items: TaskRowInput[], wide: boolean): { header: string[]; rows: string[][] } {
  // STEP ("2/4 implement") only when a task is a pipeline (spec.steps).
  const piped = items.some(({ spec, status }) => spec?.steps || status.step);
  // GATE ("test 1/3": fix episodes used of maxFixEpisodes) only while some step is fixing a gate.
  const gated = items.some(({ spec, status }) => gateSummary(spec, status) !== '');
  // STACK (its depth) only when a task has a context stack (spec.stack).
  const stacked = items.some(({ spec, status }) => isStackTask(spec, status));
  const header = [
    'NAMESPACE',
    'NAME',
    'PHASE',
    'EPISODES',
    'COST',
    'REASON',
    ...(piped ? ['STEP'] : []),
    ...(gated ? ['GATE'] : []),
    ...(stacked ? ['STACK'] : []),
    'PROGRESS',
    'PARENT',
    ...(wide ? ['TRIGGER', 'STARTED', 'LAST OUTCOME', 'NEXT EPISODE'] : []),
    'MESSAGE',
  ];
  const rows = items.map(({ namespace, name, spec, labels, status, started }) => [
    namespace,
    name,
    status.phase ?? 'Pending',
    String(status.episodes),
    `$${status.costUSD.toFixed(4)}`,
    status.reason ?? '',
    ...(piped ? [status.step?.summary ?? ''] : []),
    ...(gated ? [gateSummary(spec, status)] : []),
    ...(stacked ? [stackDepth(spec, status)] : []),
    status.progress?.summary ?? '',
    labels?.[OWNER_LABELS.AgentTask] ?? '',
    ...(wide
      ? [
          labels?.[TRIGGER_LABEL] ?? '',
          shortTime(started),
          status.lastEpisode?.outcome ?? '',
          status.nextEpisodeAt ?? '',
        ]
      : []),
    status.message ?? '',
  ]);
  return { header, rows };
}

/** `get NAME`: the AgentCredentials its last episode went through (the model gateway), and whether by default. */
export function credentialsLines(status: AgentTaskStatus): string[] {
  const used = status.credentials;
  if (!used) return [];
  const why = used.namespaceDefault ? ', the namespace default (spec.agent.credentials not set)' : '';
  return [`Credentials: AgentCredentials ${used.name}${why}; the agent got a gateway token, never a key`];
}

/** GATES: "2 passed", "1 passed, 1 failed: test" (a gate killed or not started counts as failed). */
export function gatesCell(gates: readonly GateRun[] | undefined): string {
  if (!gates || gates.length === 0) return '';
  const failed = gates.filter((g) => g.exitCode !== 0);
  const passed = `${gates.length - failed.length} passed`;
  return failed.length === 0 ? passed : `${passed}, ${failed.length} failed: ${failed.map((g) => g.name).join(',')}`;
}

/** What the workspace shows of the episode's changes (-o wide CHANGES). */
function changesCell(record: EpisodeRecord): string {
  const ws = record.evidence?.workspace;
  if (!ws) return '';
  if (ws.filesChanged !== undefined) return `${ws.filesChanged} files +${ws.insertions ?? 0} -${ws.deletions ?? 0}`;
  return ws.changed ? 'changed' : 'none';
}

/** Header and rows of `get NAME --episodes`: STEP and GATES for a pipeline, SCORE for completion.signals. */
export function episodeTable(records: EpisodeRecord[], wide: boolean): { header: string[]; rows: string[][] } {
  // SCORE (and -o wide SIGNALS) only for a task with completion.signals, whose records carry a score.
  const scored = records.some((r) => r.completionScore !== undefined);
  const piped = records.some((r) => r.step !== undefined || (r.gates?.length ?? 0) > 0);
  const header = [
    'EPISODE',
    ...(piped ? ['STEP'] : []),
    'OUTCOME',
    'EXIT',
    'DURATION',
    'COST',
    ...(piped ? ['GATES'] : []),
    'OPS',
    'FINISHED',
    'REASON',
    ...(scored ? ['SCORE'] : []),
    ...(wide ? [...(scored ? ['SIGNALS'] : []), 'TOKENS', 'COMMIT', 'CHANGES', 'CHECKLIST', 'MESSAGE'] : []),
  ];
  const rows = records.map((r) => {
    const checklist = r.evidence?.checklist;
    return [
      String(r.number),
      ...(piped ? [r.step ?? ''] : []),
      r.outcome,
      r.exitCode === null ? '' : String(r.exitCode),
      durationBetween(r.startedAt, r.finishedAt),
      `$${countedUSD(r).toFixed(4)}`,
      ...(piped ? [gatesCell(r.gates)] : []),
      opsCell(r),
      shortTime(r.finishedAt),
      r.reason ?? '',
      ...(scored ? [r.completionScore === undefined ? '' : String(r.completionScore)] : []),
      ...(wide
        ? [
            ...(scored ? [r.completionSignals?.join(',') ?? ''] : []),
            String(totalTokens(r.tokens)),
            r.evidence?.workspace?.commit?.slice(0, 12) ?? '',
            changesCell(r),
            checklist ? `${checklist.done}/${checklist.total}` : '',
            r.message ?? '',
          ]
        : []),
    ];
  });
  return { header, rows };
}
