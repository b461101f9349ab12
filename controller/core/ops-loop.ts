// The loop's part of agent ops: carrying out an ApplyOps action through the mode's OpsApplier, the Event
// for ops refused there, and episodic_ops_total. Log lines name ops, never their payloads.
import { clip, EVENT_MESSAGE_MAX } from '../api/bounds.ts';
import type { Logger } from 'pino';
import { agentSecrets, redact } from '../api/redaction.ts';
import { STATUS_OPS } from '../api/ops.ts';
import type { ApplyRejection } from '../api/ops.ts';
import type { EpisodeRecord } from '../api/episode-record.ts';
import { withApplyRejections } from '../reconciler/ops.ts';
import type { EpisodicMetrics } from '../metrics/metrics.ts';
import type { Action, ObservedEpisode } from '../reconciler/reconcile.ts';
import type { DesiredTask, OpsApplier, StatusSink } from './ports.ts';

export async function performApplyOps<T extends DesiredTask>(
  ctx: { applier?: OpsApplier<T>; sink: StatusSink<T>; logger: Logger; metrics?: EpisodicMetrics },
  task: T,
  action: Extract<Action, { type: 'ApplyOps' }>,
): Promise<ApplyRejection[]> {
  const outcome = ctx.applier
    ? await ctx.applier.apply(task, action.episode, action.ops)
    : {
        rejected: action.ops.map((o, index) => ({
          index,
          op: o.op,
          message: `${o.op}: not supported by this controller`,
        })),
      };
  const refused = new Set(outcome.rejected.map((r) => r.index));
  for (const [index, op] of action.ops.entries()) {
    const result = refused.has(index) ? 'rejected' : 'applied';
    ctx.metrics?.ops.inc({ namespace: task.namespace, op: op.op, result });
  }
  if (outcome.rejected.length === 0) return [];
  const words = redact(outcome.rejected.map((r) => r.message).join('; '), agentSecrets(task.spec));
  const message = `episode ${action.episode}: ${outcome.rejected.length} ops rejected while applying: ${words}`;
  ctx.sink.event(task, 'Warning', 'OpsRejected', clip(message, EVENT_MESSAGE_MAX), { episode: action.episode });
  return outcome.rejected;
}

/**
 * The record of an episode whose ops this pass applies is kept once they were (or failed to be): it says
 * which of them were refused. Returns what the pass's ApplyOps refused, for the next pass's facts.
 */
export async function applyOpsThenRecord<T extends DesiredTask>(
  ctx: Parameters<typeof performApplyOps<T>>[0],
  task: T,
  action: Extract<Action, { type: 'ApplyOps' }>,
  record: EpisodeRecord | undefined,
): Promise<ApplyRejection[]> {
  let refused: ApplyRejection[] = [];
  try {
    refused = await performApplyOps(ctx, task, action);
    return refused;
  } finally {
    if (record?.number === action.episode) {
      await ctx.sink.recordEpisode(task, withApplyRejections(record, action.ops, refused, agentSecrets(task.spec)));
    }
  }
}

/** episodic_ops_total for an episode whose end this pass records: its status ops, and the lines refused. */
export function countEpisodeOps(
  metrics: EpisodicMetrics | undefined,
  task: DesiredTask,
  episode: ObservedEpisode | undefined,
): void {
  const result = episode?.result;
  if (!metrics || !result) return;
  for (const op of result.ops ?? []) {
    if (STATUS_OPS.has(op.op)) metrics.ops.inc({ namespace: task.namespace, op: op.op, result: 'applied' });
  }
  const rejected = result.opsRejected?.length ?? 0;
  if (rejected > 0) metrics.ops.inc({ namespace: task.namespace, op: 'invalid', result: 'rejected' }, rejected);
}

/** Whether the pass's actions apply the ops of that episode. */
export function opsFollow(actions: readonly Action[], episode: number): boolean {
  return actions.some((a) => a.type === 'ApplyOps' && a.episode === episode);
}
