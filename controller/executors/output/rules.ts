// The rule engine behind error classification: each CLI has one ordered table of rules (claude-rules.ts,
// codex-rules.ts, gemini-rules.ts; generic-rules.ts for other agents) over the evidence its output gives.
// Structured fields come first in every table; text rules only look at the CLI's own error lines.
import type { ErrorClass } from '../../api/episode-result.ts';
import type { FormatFacts } from './format-reader.ts';
import { findUsageLimit, parseResetAt } from './usage-limit.ts';

export interface Evidence {
  exitCode: number | null;
  /** HTTP status of the failure: from a structured field, or from a fixed form the CLI prints it in. */
  status?: number;
  /** Machine-readable error kinds, lowercased: rate_limit_error, usage_limit_reached, invalid_argument… */
  kinds: ReadonlySet<string>;
  /** The CLI's own sentence about the failure: what lastEpisode.message shows. */
  message?: string;
  /** What text rules search: the message and the CLI's error lines (never a prompt echo or tool output). */
  text: string;
  /** A reset instant from a structured field (ms since the epoch). */
  resetAtMs?: number;
}

export interface Rule {
  /** Stable name; the fixtures test checks that real captures exercise every rule. */
  id: string;
  errorClass: ErrorClass;
  when: Predicate;
  /** What to fix, added to the message when the CLI's own sentence does not say it. */
  hint?: string;
  /** A usage limit that names no reset: when it lifts anyway (Gemini's daily quota: midnight Pacific). */
  defaultReset?: (now: Date) => Date | undefined;
}

export interface Verdict {
  errorClass: ErrorClass;
  /** The rule that decided it. */
  rule?: string;
  resetAt?: string;
  message?: string;
}

export interface JudgeContext {
  now: Date;
  /** Zone of wall-clock reset times printed without one. */
  timeZone?: string;
}

// --- predicates, so tables read as data --------------------------------------------------------------

export const status =
  (...codes: number[]) =>
  (e: Evidence): boolean =>
    e.status !== undefined && codes.includes(e.status);
export const serverStatus = (e: Evidence): boolean => e.status !== undefined && e.status >= 500 && e.status <= 599;
export const kind =
  (...names: string[]) =>
  (e: Evidence): boolean =>
    names.some((n) => e.kinds.has(n));
type Predicate = ((e: Evidence) => boolean) & { patterns?: RegExp[] };

/** A text rule; its pattern also finds the line shown as the message when the CLI gave no sentence. */
export const text = (pattern: RegExp): Predicate =>
  Object.assign((e: Evidence) => pattern.test(e.text), { patterns: [pattern] });
export const exit =
  (...codes: number[]) =>
  (e: Evidence): boolean =>
    e.exitCode !== null && codes.includes(e.exitCode);
export const any = (...preds: Predicate[]): Predicate =>
  Object.assign((e: Evidence) => preds.some((p) => p(e)), { patterns: preds.flatMap((p) => p.patterns ?? []) });

/** Connection-level failures every CLI reports in some wording: the model API was unreachable. */
export const NETWORK_TEXT =
  /\b(?:ECONNRESET|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|EPIPE|ENETUNREACH|EHOSTUNREACH|UND_ERR_\w+)\b|\bfetch failed\b|\bsocket hang up\b|\bconnection (?:refused|reset|failed|error)\b|\bstream disconnected\b|\berror sending request\b|\bunable to connect\b|\brequest timed out\b/i;

/** The first rule that holds decides; no rule: 'none' (an ordinary failure). */
export function judge(rules: readonly Rule[], e: Evidence, ctx: JudgeContext): Verdict {
  const rule = rules.find((r) => r.when(e));
  if (!rule) return { errorClass: 'none', message: e.message };
  const message = e.message ?? matchedLine(e.text, rule.when.patterns ?? []);
  const verdict: Verdict = { errorClass: rule.errorClass, rule: rule.id, message: withHint(message, rule.hint) };
  if (rule.errorClass === 'usageLimit') {
    const structured =
      e.resetAtMs !== undefined && Number.isFinite(e.resetAtMs) ? new Date(e.resetAtMs).toISOString() : undefined;
    const limit = findUsageLimit(e.text);
    const fromText = parseResetAt(limit ? e.text.slice(limit.lineStart) : e.text, ctx.now, ctx.timeZone);
    verdict.resetAt = structured ?? fromText ?? rule.defaultReset?.(ctx.now)?.toISOString();
  }
  return verdict;
}

function matchedLine(value: string, patterns: RegExp[]): string | undefined {
  for (const pattern of patterns) {
    const m = pattern.exec(value);
    if (!m) continue;
    const start = value.lastIndexOf('\n', m.index) + 1;
    const end = value.indexOf('\n', m.index);
    return value.slice(start, end === -1 ? undefined : end).trim();
  }
  return undefined;
}

function withHint(message: string | undefined, hint: string | undefined): string | undefined {
  if (!hint) return message;
  return message ? `${message} (${hint})` : hint;
}

// --- evidence helpers shared by the CLI tables --------------------------------------------------------

/** What a failed episode left to judge, for the CLI tables' evidence builders. */
export interface FailureOutput {
  exitCode: number | null;
  /** What the format reader made of a JSON stream; undefined for plain-text output. */
  facts?: FormatFacts;
  /** Raw tails (bounded): stdout, stderr, and the non-JSON lines of a JSON stdout. */
  stdout: string;
  stderr: string;
  stray: string;
}

/** Errors are printed last; older prose about "429" must not classify a failure. */
export const CLASSIFY_TAIL_CHARS = 8 * 1024;

/** ANSI colour codes some CLIs print even when not on a terminal. */
export function stripAnsi(value: string): string {
  return value.replace(/\u001b\[[0-9;]*[A-Za-z]/g, '');
}

/** Lines that are a stack trace or a dumped object, never what a human should read as "the error". */
export function isNoiseLine(line: string): boolean {
  const t = line.trim();
  return (
    t === '' ||
    /^at\s/.test(t) ||
    /^[{}[\]()]+,?$/.test(t) ||
    /^\[?object Object\]?$/.test(t) ||
    /\[object Object\]$/.test(t) ||
    /^\w+:\s*(?:\{|\[|undefined|null|'.*',?|\d+,?)$/.test(t)
  );
}

/** The last line of a text that is not a stack frame or a dumped object. */
export function lastMeaningfulLine(value: string): string | undefined {
  const lines = stripAnsi(value).split('\n');
  for (let i = lines.length - 1; i >= 0; i--) if (!isNoiseLine(lines[i])) return lines[i].trim();
  return undefined;
}

/** The last paragraph: consecutive meaningful lines at the end (a sentence a CLI wrapped), at most maxLines. */
export function lastBlock(value: string, maxLines = 3): string | undefined {
  const lines = stripAnsi(value).split('\n');
  let i = lines.length - 1;
  while (i >= 0 && isNoiseLine(lines[i])) i--;
  const block: string[] = [];
  while (i >= 0 && !isNoiseLine(lines[i]) && block.length < maxLines) block.unshift(lines[i--].trim());
  return block.length > 0 ? block.join(' ') : undefined;
}

/** An HTTP status a CLI printed in a fixed form (e.g. "API Error: 529", "last status: 429"). */
export function statusFrom(value: string, pattern: RegExp): number | undefined {
  const m = pattern.exec(value);
  const n = m ? Number(m[1]) : NaN;
  return n >= 400 && n <= 599 ? n : undefined;
}
