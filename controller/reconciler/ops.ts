// Agent ops in the reconciler (issue 20): what each op of an ended episode does to the task. push and sleep
// change the status itself (written with the episode's end, so they apply exactly once); set, del, spawn and
// send have effects elsewhere: they wait in status.pendingOps, and an ApplyOps action carries them out
// until the loop says they were applied. Their stores make a second application of the same (task,
// episode) a no-op, so a controller killed between applying and recording it applies them once.
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import { isTerminal } from '../api/agent-task.ts';
import {
  clip,
  EPISODE_MESSAGE_MAX,
  OP_REJECTION_MAX,
  OP_WORDS_MAX,
  OPS_REJECTED_MAX,
  SLEEP_SECONDS_MAX,
  STACK_DEPTH_MAX,
} from '../api/bounds.ts';
import { agentSecrets, redact } from '../api/redaction.ts';
import { EXTERNAL_OPS, rejectionWords } from '../api/ops.ts';
import type { ApplyRejection, Frame, Op, OpOf, RejectedOp } from '../api/ops.ts';
import { stackStatus } from './stack.ts';
import { normal, warning } from './actions.ts';
import type { Action, Events } from './actions.ts';
import type { ObservedEpisode, ReconcileInput } from './types.ts';

/** The status after the ended episode's ops (its end is already recorded in `status`), and what to say. */
export function applyEpisodeOps(
  status: AgentTaskStatus,
  ended: ObservedEpisode,
  spec: AgentTaskSpec | undefined,
  now: Date,
): { status: AgentTaskStatus; events: Events } {
  const ops = ended.result?.ops ?? [];
  const rejected: RejectedOp[] = [...(ended.result?.opsRejected ?? [])];
  const events: Events = [];
  let next = popAndPush(status, ops, spec, rejected, events, ended.number);
  next = sleepOp(next, ops, now, rejected, events, ended.number);
  const external = ops.filter((o) => EXTERNAL_OPS.has(o.op));
  if (external.length > 0) next = { ...next, pendingOps: { episode: ended.number, ops: external } };
  if (ops.length === 0 && rejected.length === 0) return { status: next, events };
  const secrets = agentSecrets(spec);
  const words = (text: string) => redact(text, secrets);
  const last = next.lastEpisode && {
    ...next.lastEpisode,
    ...(ops.length > 0 ? { ops: ops.map((o) => words(opWords(o))) } : {}),
    ...(rejected.length > 0 ? { opsRejected: clip(words(rejectionWords(rejected)), EPISODE_MESSAGE_MAX) } : {}),
  };
  if (rejected.length > 0) {
    const n = rejected.length;
    events.push(
      warning('OpsRejected', `episode ${ended.number}: ${n} op${n === 1 ? '' : 's'} rejected: ${last?.opsRejected}`),
    );
  }
  return { status: { ...next, lastEpisode: last }, events };
}

/** A few words about an op for records and events: never its payload (a value or message may be a secret). */
export function opWords(op: Op): string {
  switch (op.op) {
    case 'push':
      return `push ${op.frames.length}`;
    case 'set':
    case 'del':
      return `${op.op} ${op.key}`;
    case 'spawn':
      return `spawn ${op.name}`;
    case 'send':
      return `send ${op.to}`;
    case 'sleep':
      return op.seconds !== undefined ? `sleep ${op.seconds}s` : `sleep until ${op.until}`;
  }
}

/** The stack after an episode: its top popped if it ended well, then each push on top in order. */
function popAndPush(
  status: AgentTaskStatus,
  ops: readonly Op[],
  spec: AgentTaskSpec | undefined,
  rejected: RejectedOp[],
  events: Events,
  n: number,
): AgentTaskStatus {
  const pushes = ops.filter((o): o is OpOf<'push'> => o.op === 'push');
  if (!spec?.stack) {
    for (const _ of pushes) rejected.push({ line: 0, message: 'push: the task has no spec.stack' });
    return status;
  }
  const outcome = status.lastEpisode?.outcome;
  const done = outcome === 'succeeded' || outcome === 'continue';
  let frames: Frame[] = status.stack?.frames ?? spec.stack;
  if (done) frames = frames.slice(1);
  for (const push of pushes) {
    if (frames.length + push.frames.length > STACK_DEPTH_MAX) {
      rejected.push({ line: 0, message: `push: the stack would hold more than ${STACK_DEPTH_MAX} frames` });
    } else frames = [...push.frames, ...frames];
  }
  const failedTask = isTerminal(status.phase) && status.phase !== 'Succeeded';
  if (!done || failedTask) return { ...status, stack: stackStatus(frames) };
  status = framedProgress(status);
  if (frames.length === 0 && !spec.restartStack) {
    events.push(normal('StackEmpty', `episode ${n} finished the last frame of the stack`));
    return {
      ...status,
      stack: stackStatus([]),
      phase: 'Succeeded',
      reason: 'StackEmpty',
      message: `episode ${n} finished the last frame of the stack`,
      nextEpisodeAt: undefined,
    };
  }
  if (frames.length === 0) {
    frames = spec.stack;
    events.push(normal('StackRestarted', `episode ${n} emptied the stack; it starts over (restartStack)`));
  }
  const message = `episode ${n} finished a frame; ${frames.length} left on the stack`;
  // A completion signal finishes the frame, not the task, while frames are left.
  const reopened = status.phase === 'Succeeded' ? { phase: 'Pending' as const, reason: 'StackNext', message } : {};
  return { ...status, ...reopened, stack: stackStatus(frames) };
}

/** A finished frame is progress for the breaker, as a finished task is (the workspace may not change). */
function framedProgress(status: AgentTaskStatus): AgentTaskStatus {
  const breaker = status.breaker;
  if (breaker?.state !== 'Closed') return status;
  const at = status.lastEpisode?.finishedAt;
  return { ...status, breaker: { ...breaker, noProgress: 0, ...(at ? { lastProgressAt: at } : {}) } };
}

/** `sleep`: the task waits until then (the latest of a backoff and the sleep), unless it ended. */
function sleepOp(
  status: AgentTaskStatus,
  ops: readonly Op[],
  now: Date,
  rejected: RejectedOp[],
  events: Events,
  n: number,
): AgentTaskStatus {
  const sleep = ops.filter((o): o is OpOf<'sleep'> => o.op === 'sleep').at(-1);
  if (!sleep || isTerminal(status.phase)) return status;
  const wake = sleep.seconds !== undefined ? now.getTime() + sleep.seconds * 1000 : Date.parse(sleep.until ?? '');
  if (wake > now.getTime() + SLEEP_SECONDS_MAX * 1000) {
    rejected.push({ line: 0, message: `sleep: more than ${SLEEP_SECONDS_MAX} seconds ahead` });
    return status;
  }
  if (!(wake > now.getTime())) return status; // a time already past: no sleep
  const backoff = status.nextEpisodeAt ? Date.parse(status.nextEpisodeAt) : 0;
  const at = new Date(Math.max(wake, backoff)).toISOString();
  const message = `episode ${n} asked to sleep; next episode at ${at}`;
  events.push(normal('Sleeping', message));
  return { ...status, phase: 'Waiting', reason: 'Sleeping', message, nextEpisodeAt: at };
}

/** Pending ops the loop reports applied leave the status; those it refused are named in status.lastEpisode. */
export function settleOps(
  status: AgentTaskStatus,
  opsApplied: number | undefined,
  refused: readonly ApplyRejection[] = [],
  spec?: AgentTaskSpec,
): AgentTaskStatus {
  const pending = status.pendingOps;
  if (!pending || opsApplied === undefined || opsApplied < pending.episode) return status;
  const last = status.lastEpisode;
  const said =
    last?.number === pending.episode && opsApplied === pending.episode
      ? { ...last, ...withApplyRejections(last, pending.ops, refused, agentSecrets(spec)) }
      : last;
  return { ...status, lastEpisode: said, pendingOps: undefined };
}

type OpsFields = { ops?: string[]; opsRejected?: string };

/**
 * An episode's ops as applied (its status.lastEpisode, its record): each op refused while applying is marked
 * "(rejected)" in `ops` and its reason added to `opsRejected`. `pending` are the ops applied, which `refused`
 * numbers; they are the episode's set/del/spawn/send ops, in the order `ops` lists them among the others.
 */
export function withApplyRejections<F extends OpsFields>(
  fields: F,
  pending: readonly Op[],
  refused: readonly ApplyRejection[],
  secrets: readonly string[],
): F {
  const known = refused.filter((r) => pending[r.index]?.op === r.op);
  if (known.length === 0) return fields;
  const marked = new Set(known.map((r) => r.index));
  let external = -1;
  const ops = fields.ops?.map((w) => {
    if (!EXTERNAL_WORD.test(w)) return w;
    external++;
    return marked.has(external) ? `${clip(w, OP_WORDS_MAX - REJECTED_MARK.length)}${REJECTED_MARK}` : w;
  });
  const shown = known.length > OPS_REJECTED_MAX ? known.slice(0, OPS_REJECTED_MAX - 1) : known;
  const more = known.length - shown.length;
  // The count of those not shown survives the clipping: it says the list is not whole.
  const tail = more > 0 ? `; ${more} more ops refused while applying` : '';
  const reasons = redact(shown.map((r) => clip(r.message, OP_REJECTION_MAX)).join('; '), secrets);
  const said = [fields.opsRejected, reasons].filter(Boolean).join('; ');
  return { ...fields, ...(ops ? { ops } : {}), opsRejected: `${clip(said, EPISODE_MESSAGE_MAX - tail.length)}${tail}` };
}

/** opWords of an op applied outside the status (set, del, spawn, send). */
const EXTERNAL_WORD = /^(set|del|spawn|send) /;
const REJECTED_MARK = ' (rejected)';

/** ApplyOps for pending ops (again after a restart: applying is idempotent), unless the task is being deleted. */
export function opsToApply(status: AgentTaskStatus, input: Pick<ReconcileInput, 'deleted'>): Action[] {
  const pending = status.pendingOps;
  if (!pending || input.deleted) return [];
  return [{ type: 'ApplyOps', episode: pending.episode, ops: pending.ops }];
}
