// Bounds and money, each written once: how long a message may be and how it is cut, how dollars are
// rounded, how token counts add up. Everything here is pure and imports nothing.

/** The mark a cut text ends with (or, cut from the front, starts with). One character: caps stay exact. */
export const ELLIPSIS = '…';

/** Longest EpisodeResult.message and lastEpisode.message, in characters. */
export const EPISODE_MESSAGE_MAX = 1000;
/** Longest status.message (it quotes user input: a spec error, an agent's words). */
export const STATUS_MESSAGE_MAX = 2000;
/** Longest Event message (the events API's note limit). */
export const EVENT_MESSAGE_MAX = 1024;
/** Longest one-line summary of agent output (the head of an error, the tail of a final answer). */
export const LINE_MAX = 300;

/**
 * Bytes of one log line the log views (`episodic logs`, -f, the console) hold, and parse as JSON: of a longer
 * line only this much is kept, the rest is counted, and it is shown cut as text with its size.
 */
export const LOG_LINE_MAX_BYTES = 4 * 1024 * 1024;

/** `text` if it fits in `max` characters, else its first max − 1 characters and an ellipsis. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}${ELLIPSIS}`;
}

/** `text` if it fits in `max` characters, else an ellipsis and its last max − 1 characters. */
export function clipStart(text: string, max: number): string {
  return text.length <= max ? text : `${ELLIPSIS}${text.slice(text.length - max + 1)}`;
}

/** Runs of whitespace (newlines too) as one space, trimmed: a message fits on one line. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** The start of a text on one line: error messages lead with what matters. */
export function headLine(text: string | undefined, max = LINE_MAX): string | undefined {
  if (text === undefined) return undefined;
  const line = oneLine(text.length > max * 8 ? text.slice(0, max * 8) : text);
  return line === '' ? undefined : clip(line, max);
}

/** The end of a text on one line: an agent's final words sit at the end. */
export function tailLine(text: string | undefined, max = LINE_MAX): string | undefined {
  if (text === undefined) return undefined;
  const line = oneLine(text.length > max * 8 ? text.slice(-max * 8) : text);
  return line === '' ? undefined : clipStart(line, max);
}

/**
 * The mark untrusted text cut for a prompt ends with: in words and on its own line, since an agent reads it and
 * a lone … could be the author's own (or the end of a file's last line).
 */
export const PROMPT_CUT_MARK = '\n[… cut by episodic]';

/** `text` if it fits in `max` characters, else its first `max` and PROMPT_CUT_MARK (max bounds the untrusted part). */
export function clipPrompt(text: string, max: number): string {
  return text.length > max ? text.slice(0, max) + PROMPT_CUT_MARK : text;
}

/** Longest text of the conflicted files a resolution episode sees ({{integrate.conflicts}}). */
export const CONFLICTS_TEXT_MAX = 8000;
/** Longest webhook delivery id kept; no mark: the id is a key (a delivery seen twice is ignored). */
export const DELIVERY_ID_MAX = 100;
/** Longest webhook event name kept; no mark: it is compared with the events a trigger knows. */
export const WEBHOOK_EVENT_MAX = 50;
/** A refused resume token is kept as its first 64 characters and the mark: shortened, it is still handled once. */
export const REFUSED_TOKEN_MAX = 65;
/** Longest value quoted back when a field is refused (a resume request's episodes), the mark included when cut. */
export const QUOTED_VALUE_MAX = 40;
/** Longest RALPH_STATUS field value kept; no mark: a value is a word compared (EXIT_SIGNAL: true) or a count. */
export const RALPH_FIELD_MAX = 64;

/** Longest trigger status.lastError (a forge's or the apiserver's words). */
export const TRIGGER_ERROR_MAX = 500;
/** Longest name quoted back in a refusal: what was refused as a name may be any length. */
export const QUOTED_NAME_MAX = 70;
/** Longest connect target (host:port) quoted back in a sandbox proxy refusal: 100 characters and the mark. */
export const QUOTED_TARGET_MAX = 101;
/** Longest model name kept from a provider's answer (a metered request's `model`). */
export const MODEL_NAME_MAX = 200;
/** Longest provider error type (`rate_limit_error`, `RESOURCE_EXHAUSTED`) kept from an upstream answer. */
export const ERROR_TYPE_MAX = 60;
/** Longest requester (`by`) of a resume request or a hold. */
export const BY_MAX = 128;

/** Who asked (a resume request's or a hold's `by`): trimmed and cut, `unknown` when not given. */
export function requester(by: unknown): string {
  return typeof by === 'string' && by.trim() ? by.trim().slice(0, BY_MAX) : 'unknown';
}

const UNSAFE_NAME = /[^A-Za-z0-9._-]/g;
const UNSAFE_PATH = /[^A-Za-z0-9._/-]/g;

/**
 * Untrusted or free text made safe as a name, a marker key or a requester: every character outside
 * [A-Za-z0-9._-] (and `/` when `slash`) becomes `_`, then it is cut to `max` (no mark: names stay names).
 */
export function cleanName(text: string, max: number, opts: { slash?: boolean } = {}): string {
  return text.replace(opts.slash ? UNSAFE_PATH : UNSAFE_NAME, '_').slice(0, max);
}

/** Float sums of dollars drift (0.1 + 0.2); 1e-10 dollars hides that without dropping a tiny episode's cost. */
export function roundUSD(usd: number): number {
  return Math.round(usd * 1e10) / 1e10;
}

export interface TokenCounts {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/** Field by field: a task's totals after one more episode. */
export function addTokens(a: TokenCounts, b: TokenCounts): TokenCounts {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
  };
}

/** The tokens caps count: input + output (cache reads and writes are part of neither cap). */
export function totalTokens(tokens: Pick<TokenCounts, 'input' | 'output'>): number {
  return tokens.input + tokens.output;
}

// Agent ops ($EPISODIC_OPS, api/ops.ts): untrusted input, so every size is capped where it is parsed.
/** Longest op line, in characters; a longer line is rejected unread. */
export const OP_LINE_MAX = 16 * 1024;
/** Bytes of an ops file read at all: the rest is rejected with one message. */
export const OPS_FILE_MAX = 256 * 1024;
/** Ops applied per episode; later lines are rejected. */
export const OPS_PER_EPISODE_MAX = 32;
/** Rejected-op messages kept per episode (the rest are counted in the last one). */
export const OPS_REJECTED_MAX = 8;
/** Longest words about one op a status or record keeps ("spawn NAME (rejected)"). */
export const OP_WORDS_MAX = 80;
/** Longest rejected-op message, in characters. */
export const OP_REJECTION_MAX = 200;
/** Frames in one push (and in a spawn's stack). */
export const FRAMES_PER_PUSH_MAX = 16;
/** Longest frame prompt, in characters. */
export const FRAME_PROMPT_MAX = 8 * 1024;
/** Vars of one frame, and the longest value of each. */
export const FRAME_VARS_MAX = 16;
export const FRAME_VAR_VALUE_MAX = 1024;
/** Frames a task's stack holds at most; a push past it is rejected. */
export const STACK_DEPTH_MAX = 64;
/** Frames status.stack shows (top first); the depth is always exact. */
export const STACK_SHOWN_MAX = 3;
/** Characters of each shown frame in status.stack. */
export const STACK_FRAME_SHOWN_MAX = 200;
/** Longest blackboard key; keys match BLACKBOARD_KEY (ConfigMap data keys). */
export const BLACKBOARD_KEY_MAX = 128;
/** Longest blackboard value, in characters. */
export const BLACKBOARD_VALUE_MAX = 4 * 1024;
/** Keys a namespace's blackboard holds at most; a set of a new key past it is rejected. */
export const BLACKBOARD_KEYS_MAX = 128;
/** Longest `send` message, in characters. */
export const SEND_MESSAGE_MAX = 4 * 1024;
/** Longest sleep: 30 days. */
export const SLEEP_SECONDS_MAX = 30 * 24 * 3600;
/**
 * Cluster: bytes of the 4 KiB termination message that ops may take (their JSON). The rest of the result
 * (exit code, cost, evidence, the message) keeps the other ~1.5 KiB; ops past the budget are rejected.
 */
export const OPS_TERMINATION_BUDGET = 2560;

/** Longest gate output kept (a record's, a result's, status.steps[].gate.lastOutput, {{gate.output}}): its tail. */
export const GATE_OUTPUT_MAX = 2000;
/** Longest gate output quoted in a GateFailed message (status.message holds the step prefix too). */
export const GATE_MESSAGE_OUTPUT_MAX = 1200;

// Outputs (spec.steps, dependsOn: see api/outputs.ts). Bytes are UTF-8; the total counts keys and values.
/** Most keys one episode may publish. */
export const OUTPUTS_MAX_KEYS = 16;
/** Longest output key, in characters (a C identifier). */
export const OUTPUT_KEY_MAX = 64;
/** Largest output value, in bytes. */
export const OUTPUT_VALUE_MAX_BYTES = 1024;
/** Largest sum of key and value bytes of one episode's outputs. */
export const OUTPUTS_TOTAL_MAX_BYTES = 4096;
/** Longest note saying which outputs were dropped or which referenced outputs were unknown. */
export const OUTPUTS_NOTE_MAX = 500;
// What needs a person (status.review, issue 19 §6): how many items status keeps and how long each may be.
/** `[!]` items of the plan file kept in status.review; the rest are counted in flaggedMore. */
export const REVIEW_FLAGGED_MAX = 20;
/** New DISCOVERY.md / IDEAS.md entries kept in status.review; the rest are counted in entriesMore. */
export const REVIEW_ENTRIES_MAX = 30;
/** Longest item text in status.review, in characters (an entry's first lines). */
export const REVIEW_TEXT_MAX = 200;
/** Bytes of compact JSON an episode's review evidence may take in the 4096-byte termination message. */
export const REVIEW_EVIDENCE_BYTES = 768;
/** Longest item text in an episode's review evidence (a budget shared by up to a few dozen items). */
export const REVIEW_EVIDENCE_TEXT_MAX = 120;
/** Digests of entries an episode removed, at most. */
export const REVIEW_REMOVED_MAX = 16;

// The model gateway (issue 29): every exchange between an agent and its upstream is bounded in size and time,
// so a stalled upstream (or agent) never holds a request, its grant's in-flight count or a socket for ever.
/** Largest request body: a CLI sends its whole context (images too) in one request, never more than this. */
export const GATEWAY_REQUEST_BYTES_MAX = 32 * 1024 * 1024;
/** Longest wait for the upstream's answer to start: the providers' own SDKs give up on a request at 10 min. */
export const GATEWAY_HEADERS_TIMEOUT_MS = 10 * 60_000;
/** Longest silence inside an answer once it started: streams send pings every few seconds; 5 min is a dead one. */
export const GATEWAY_IDLE_TIMEOUT_MS = 5 * 60_000;
/** Longest whole exchange: a 64k-token answer at ~50 tokens/s streams for ~21 min; past 30 min it is cut. */
export const GATEWAY_REQUEST_TIMEOUT_MS = 30 * 60_000;
