// Agent ops: what an episode hands back to the controller through $EPISODIC_OPS, one JSON object per line.
// They come from an agent and are untrusted: every field is validated and bounded here, a bad line is
// rejected with a message and never stops the other lines, and nothing of a payload reaches a log.
import { z } from 'zod';
import {
  BLACKBOARD_KEY_MAX,
  BLACKBOARD_VALUE_MAX,
  clip,
  FRAME_PROMPT_MAX,
  FRAME_VAR_VALUE_MAX,
  FRAME_VARS_MAX,
  FRAMES_PER_PUSH_MAX,
  OP_LINE_MAX,
  OP_REJECTION_MAX,
  OPS_FILE_MAX,
  OPS_PER_EPISODE_MAX,
  OPS_REJECTED_MAX,
  SEND_MESSAGE_MAX,
  SLEEP_SECONDS_MAX,
} from './bounds.ts';

/** A task name an op may give (spawn's child, send's target): a DNS label, so never a path such as `../x`. */
const TaskNameSchema = z
  .string()
  .max(40)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a lowercase DNS label (a-z, 0-9, -)');

/** ConfigMap data keys allow [-._a-zA-Z0-9]; prompts read them as {{bb.KEY}}. */
export const BLACKBOARD_KEY = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
export const BlackboardKeySchema = z
  .string()
  .min(1)
  .max(BLACKBOARD_KEY_MAX)
  .regex(BLACKBOARD_KEY, 'must match [A-Za-z0-9_][A-Za-z0-9_.-]*');
const VarKeySchema = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'must be an identifier');

/** One frame of a context stack: a prompt, or a prompt with vars ({{vars.NAME}}). */
export const FrameSchema = z.union([
  z.string().min(1).max(FRAME_PROMPT_MAX),
  z
    .object({
      prompt: z.string().min(1).max(FRAME_PROMPT_MAX),
      vars: z
        .record(VarKeySchema, z.string().max(FRAME_VAR_VALUE_MAX))
        .refine((v) => Object.keys(v).length <= FRAME_VARS_MAX, `at most ${FRAME_VARS_MAX} vars`)
        .optional(),
    })
    .strict(),
]);
export type Frame = z.infer<typeof FrameSchema>;
const FramesSchema = z.array(FrameSchema).min(1).max(FRAMES_PER_PUSH_MAX);

export const PushOpSchema = z.object({ op: z.literal('push'), frames: FramesSchema }).strict();

export const SpawnOpSchema = z
  .object({
    op: z.literal('spawn'),
    name: TaskNameSchema,
    prompt: z.string().min(1).max(FRAME_PROMPT_MAX).optional(),
    stack: FramesSchema.optional(),
    agent: z
      .object({
        command: z.array(z.string().max(1024)).min(1).max(64).optional(),
        env: z
          .array(z.object({ name: z.string().max(128), value: z.string().max(FRAME_VAR_VALUE_MAX) }).strict())
          .max(32)
          .optional(),
      })
      .strict()
      .optional(),
    limits: z
      .object({
        maxEpisodes: z.number().int().min(1).optional(),
        maxCostUSD: z.number().nonnegative().optional(),
        maxTokens: z.number().int().min(1).optional(),
        episodeTimeoutSeconds: z.number().int().min(1).optional(),
        maxChildren: z.number().int().min(0).optional(),
      })
      .strict()
      .optional(),
    labels: z
      .record(z.string().max(63), z.string().max(63))
      .refine((l) => Object.keys(l).length <= 16, 'at most 16 labels')
      .optional(),
    workspace: z.string().max(253).optional(),
  })
  .strict()
  .refine((o) => (o.prompt === undefined) !== (o.stack === undefined), {
    message: 'exactly one of prompt or stack is required',
  });

export const SendOpSchema = z
  .object({ op: z.literal('send'), to: TaskNameSchema, message: z.string().min(1).max(SEND_MESSAGE_MAX) })
  .strict();

export const SetOpSchema = z
  .object({ op: z.literal('set'), key: BlackboardKeySchema, value: z.string().max(BLACKBOARD_VALUE_MAX) })
  .strict();

export const DelOpSchema = z.object({ op: z.literal('del'), key: BlackboardKeySchema }).strict();

export const SleepOpSchema = z
  .object({
    op: z.literal('sleep'),
    seconds: z.number().positive().max(SLEEP_SECONDS_MAX).optional(),
    until: z.iso.datetime({ offset: true }).optional(),
  })
  .strict()
  .refine((o) => (o.seconds === undefined) !== (o.until === undefined), {
    message: 'exactly one of seconds or until is required',
  });

/**
 * Every op kind and where its effect lives, declared once: `status` ops change the task's status with the
 * episode's end (exactly once by construction); `blackboard` ops go to the namespace's board; `handler` ops
 * to the mode's handler for that kind. The last two wait in status.pendingOps until applied.
 */
export const OP_KINDS = {
  push: { home: 'status' },
  spawn: { home: 'handler' },
  send: { home: 'handler' },
  set: { home: 'blackboard' },
  del: { home: 'blackboard' },
  sleep: { home: 'status' },
} as const satisfies Record<string, { home: OpHome }>;
export type OpHome = 'status' | 'blackboard' | 'handler';
export type OpName = keyof typeof OP_KINDS;
export const OP_NAMES = Object.keys(OP_KINDS) as OpName[];
/** The kinds whose effects live in `home`. */
export type OpNameAt<H extends OpHome> = { [K in OpName]: (typeof OP_KINDS)[K]['home'] extends H ? K : never }[OpName];

function kindsAt(pick: (home: OpHome) => boolean): ReadonlySet<OpName> {
  return new Set(OP_NAMES.filter((name) => pick(OP_KINDS[name].home)));
}
/** Ops applied in the status itself, with the episode's end. */
export const STATUS_OPS = kindsAt((home) => home === 'status');
/** Ops whose effects live outside the task's status: they wait in pendingOps for an ApplyOps action. */
export const EXTERNAL_OPS = kindsAt((home) => home !== 'status');

export const OpSchema = z.discriminatedUnion('op', [
  PushOpSchema,
  SpawnOpSchema,
  SendOpSchema,
  SetOpSchema,
  DelOpSchema,
  SleepOpSchema,
]);
export type Op = z.infer<typeof OpSchema>;
export type OpOf<N extends OpName> = Extract<Op, { op: N }>;
// The schemas and the table name the same kinds (a kind added to one and not the other fails typecheck).
const sameKinds: [Op['op'], OpName] extends [OpName, Op['op']] ? true : never = true;
void sameKinds;

export type BlackboardOp = OpOf<OpNameAt<'blackboard'>>;
export function isBlackboardOp(op: Op): op is BlackboardOp {
  return OP_KINDS[op.op].home === 'blackboard';
}

/** A line that was not applied, and why (never quoting the payload: it may hold a secret). */
export const RejectedOpSchema = z.object({
  line: z.number().int().min(0),
  message: z.string().max(OP_REJECTION_MAX),
});
export type RejectedOp = z.infer<typeof RejectedOpSchema>;

/** An op refused while applying (a full blackboard, maxChildren reached): `index` is its place in the ops applied. */
export interface ApplyRejection {
  index: number;
  op: OpName;
  message: string;
}

export interface ParsedOps {
  ops: Op[];
  rejected: RejectedOp[];
}

/** Every line of an ops file: the valid ops in order, and a message for each line that is not one. */
export function parseOps(text: string): ParsedOps {
  const ops: Op[] = [];
  const rejected: RejectedOp[] = [];
  const reject = (line: number, message: string) => rejected.push({ line, message: clip(message, OP_REJECTION_MAX) });
  const cut = text.length > OPS_FILE_MAX;
  const lines = (cut ? text.slice(0, OPS_FILE_MAX) : text).split('\n');
  lines.forEach((raw, index) => {
    const line = index + 1;
    const trimmed = raw.trim();
    if (trimmed === '') return;
    if (cut && index === lines.length - 1) return; // cut mid-line: the message below covers it
    const parsed = trimmed.length > OP_LINE_MAX ? tooLong : parseLine(trimmed);
    if (!parsed.ok) reject(line, parsed.message);
    else if (ops.length >= OPS_PER_EPISODE_MAX) reject(line, `more than ${OPS_PER_EPISODE_MAX} ops in one episode`);
    else ops.push(parsed.op);
  });
  if (cut) reject(lines.length, `ops file longer than ${OPS_FILE_MAX} bytes; the rest was not read`);
  return { ops, rejected: boundRejected(rejected) };
}

type LineParse = { ok: true; op: Op } | { ok: false; message: string };
const tooLong: LineParse = { ok: false, message: `line longer than ${OP_LINE_MAX} characters` };

function parseLine(line: string): LineParse {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { ok: false, message: 'not valid JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, message: 'not a JSON object' };
  const name = (value as { op?: unknown }).op;
  if (typeof name !== 'string' || !(OP_NAMES as readonly string[]).includes(name)) {
    // Whole or not at all: redaction (redaction.ts) can only recognize a secret it sees whole.
    const shown = typeof name === 'string' && name.length <= NAME_SHOWN_MAX ? ` ${JSON.stringify(name)}` : '';
    return { ok: false, message: `unknown op${shown} (known: ${OP_NAMES.join(', ')})` };
  }
  const parsed = OpSchema.safeParse(value);
  if (parsed.success) return { ok: true, op: parsed.data };
  return { ok: false, message: `${name}: ${issueWords(parsed.error.issues)}` };
}

/** Longest agent-chosen word (an unknown op or field) a rejection quotes; a longer one is not quoted. */
const NAME_SHOWN_MAX = 32;

/** Where and what, never the offending value; zod quotes only unknown keys, shown whole or not at all. */
function issueWords(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 3)
    .map((i) => {
      const message = i.code === 'unrecognized_keys' ? unknownFields(i.keys) : i.message;
      const path = i.path.map(String).filter((p) => p.length <= NAME_SHOWN_MAX);
      return path.length > 0 ? `${path.join('.')}: ${message}` : message;
    })
    .join('; ');
}

function unknownFields(keys: readonly string[]): string {
  const shown = keys.filter((k) => k.length <= NAME_SHOWN_MAX).map((k) => JSON.stringify(k));
  const hidden = keys.length - shown.length;
  const words = [...shown, ...(hidden > 0 ? [`${hidden} too long to show`] : [])].join(', ');
  return `unknown field${keys.length === 1 ? '' : 's'} ${words}`;
}

/** The first OPS_REJECTED_MAX − 1 rejections, then one that counts the rest. */
export function boundRejected(rejected: RejectedOp[]): RejectedOp[] {
  if (rejected.length <= OPS_REJECTED_MAX) return rejected;
  const kept = rejected.slice(0, OPS_REJECTED_MAX - 1);
  const rest = rejected.slice(OPS_REJECTED_MAX - 1);
  const first = rest[0] as RejectedOp;
  return [...kept, { line: first.line, message: `${rest.length} more lines rejected (from line ${first.line})` }];
}

/** "line 3: push: frames: Too small…" for records and events. */
export function rejectionWords(rejected: readonly RejectedOp[]): string {
  return rejected.map((r) => (r.line > 0 ? `line ${r.line}: ${r.message}` : r.message)).join('; ');
}
