// Error classes for a FAILED episode (non-zero exit or agent-reported error); a successful run that talks
// about "429" in prose is not classified at all.
//
// Precedence when several match: usageLimit > fatal > transient > none.
// - usageLimit first: limits are also reported as HTTP 429 / rate-limit text, and a short backoff would just
//   burn attempts against a wall; waiting until the stated reset is correct, and it heals by itself, so it
//   must not be escalated to fatal (which needs a human) either.
// - fatal over transient: a bad key or a forbidden request often arrives amid retry chatter (5xx, resets);
//   retrying can never fix it, so fail fast instead of looping through backoff.
import type { ErrorClass } from '../../api/episode-result.ts';
import type { ProcessExit } from './types.ts';
import { findUsageLimit, parseResetAt } from './usage-limit.ts';

export interface Classification {
  errorClass: ErrorClass;
  resetAt?: string;
  /** The line that decided it, for the human-readable message. */
  evidence?: string;
}

const TRANSIENT_STATUSES = new Set([429, 500, 502, 503, 504, 529]);
const FATAL_STATUSES = new Set([400, 401, 403, 404]);
// E2BIG: a prompt too long for argv (promptVia: argument) fails the same way every episode.
const FATAL_SPAWN_CODES = new Set(['ENOENT', 'EACCES', 'ENOTDIR', 'EPERM', 'E2BIG']);
// Our side failed, not the agent: fork hit a process or memory limit for a moment.
const TRANSIENT_SPAWN_CODES = new Set(['EAGAIN', 'ENOMEM']);

// Gemini CLI exit codes: 41 auth, 42 input error, 52 config error are not fixed by retrying; 53 is the turn
// limit: a plain failure, nothing to back off from.
const GEMINI_FATAL_EXITS = new Set([41, 42, 52]);
const GEMINI_TURN_LIMIT_EXIT = 53;

const FATAL_PATTERNS: RegExp[] = [
  /\b(?:status(?:\s*code)?|http|api error)\s*[:=]?\s*(?:401|403)\b/i,
  /\b401\s+unauthorized\b|\b403\s+forbidden\b/i,
  /\b(?:authentication_error|permission_error|invalid_request_error)\b/,
  /\binvalid (?:x-)?api[ -]key\b|\bapi key not valid\b|\bincorrect api key\b/i,
  /\bplease run \/login\b|\boauth token (?:has )?expired\b|\bcredit balance is too low\b/i,
  /\b(?:UNAUTHENTICATED|PERMISSION_DENIED)\b/,
];

const TRANSIENT_PATTERNS: RegExp[] = [
  /\b(?:status(?:\s*code)?|http|api error)\s*[:=]?\s*(?:429|5\d\d)\b/i,
  /\btoo many requests\b/i,
  /\b(?:500 internal server error|502 bad gateway|503 service unavailable|504 gateway timeout)\b/i,
  /\boverloaded(?:_error)?\b/i,
  /\brate_limit_error\b|\brate[ -]limit(?:ed| exceeded| reached)\b/i,
  /\b(?:ECONNRESET|ETIMEDOUT|ECONNREFUSED|EAI_AGAIN|EPIPE|ENETUNREACH|EHOSTUNREACH)\b/,
  /\bfetch failed\b|\bsocket hang up\b|\bno messages returned\b|\bstream disconnected\b/i,
  /\b(?:RESOURCE_EXHAUSTED|UNAVAILABLE|DEADLINE_EXCEEDED)\b/,
];

function lineAround(text: string, index: number): string {
  const start = text.lastIndexOf('\n', index) + 1;
  const end = text.indexOf('\n', index);
  return text.slice(start, end === -1 ? undefined : end);
}

function firstMatch(texts: string[], patterns: RegExp[]): string | undefined {
  for (const text of texts) {
    for (const pattern of patterns) {
      const m = pattern.exec(text);
      if (m) return lineAround(text, m.index);
    }
  }
  return undefined;
}

/** Classifies failure evidence: API statuses and free text (error messages, stderr, output tails). */
export function classifyText(texts: string[], statuses: number[], now: Date): Classification {
  for (const text of texts) {
    const limit = findUsageLimit(text);
    if (limit) {
      return { errorClass: 'usageLimit', resetAt: parseResetAt(text.slice(limit.lineStart), now), evidence: limit.line };
    }
  }
  const fatalStatus = statuses.find((s) => FATAL_STATUSES.has(s));
  if (fatalStatus !== undefined) return { errorClass: 'fatal', evidence: firstMatch(texts, FATAL_PATTERNS) };
  const fatal = firstMatch(texts, FATAL_PATTERNS);
  if (fatal !== undefined) return { errorClass: 'fatal', evidence: fatal };
  const transientStatus = statuses.find((s) => TRANSIENT_STATUSES.has(s) || (s >= 500 && s <= 599));
  const transient = firstMatch(texts, TRANSIENT_PATTERNS);
  if (transientStatus !== undefined || transient !== undefined) return { errorClass: 'transient', evidence: transient };
  return { errorClass: 'none' };
}

export interface FailureInput {
  exit: ProcessExit;
  /** Whether Gemini CLI's documented exit codes apply. */
  geminiExitCodes: boolean;
  statuses: number[];
  texts: string[];
  now: Date;
}

export function classifyFailure(input: FailureInput): Classification {
  const { exit } = input;
  if (exit.spawnErrorCode !== undefined && FATAL_SPAWN_CODES.has(exit.spawnErrorCode)) {
    return { errorClass: 'fatal', evidence: exit.spawnErrorMessage ?? `cannot start agent: ${exit.spawnErrorCode}` };
  }
  if (exit.spawnErrorCode !== undefined && TRANSIENT_SPAWN_CODES.has(exit.spawnErrorCode)) {
    return { errorClass: 'transient', evidence: exit.spawnErrorMessage ?? `cannot start agent: ${exit.spawnErrorCode}` };
  }
  if (input.geminiExitCodes && exit.exitCode !== null) {
    if (exit.exitCode === GEMINI_TURN_LIMIT_EXIT) return { errorClass: 'none' };
    if (GEMINI_FATAL_EXITS.has(exit.exitCode)) return { errorClass: 'fatal' };
  }
  // 126/127: a shell wrapper could not execute or find the agent command.
  if (exit.exitCode === 126 || exit.exitCode === 127) {
    return { errorClass: 'fatal', evidence: firstMatch(input.texts, [/command not found|permission denied|not found/i]) };
  }
  const texts = exit.spawnErrorMessage ? [exit.spawnErrorMessage, ...input.texts] : input.texts;
  return classifyText(texts, input.statuses, input.now);
}
