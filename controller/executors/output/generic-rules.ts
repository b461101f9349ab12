// Agents episodic has no table for (output: text or auto on plain text from a command that is not claude,
// codex or gemini, e.g. a wrapper script): wordings common to HTTP APIs and CLIs, and every error wording
// the three CLIs print in text mode, classified as their own tables do.
// Precedence: usageLimit > contextTooLong > fatal > transient.
// - usageLimit first: limits are also reported as HTTP 429 / rate-limit text, and a short backoff would just
//   burn attempts against a wall; waiting until the stated reset is correct.
// - fatal over transient: a bad key often arrives amid retry chatter (5xx, resets); retrying can never fix it.
import { keepTail } from './json-fields.ts';
import {
  any,
  CLASSIFY_TAIL_CHARS,
  NETWORK_TEXT,
  serverStatus,
  status,
  text,
  type Evidence,
  type FailureOutput,
  type Rule,
} from './rules.ts';
import { GEMINI_QUOTA_ZONE } from './gemini-rules.ts';
import { findUsageLimit } from './usage-limit.ts';
import { nextMidnight } from './zoned-time.ts';

const FATAL_TEXT =
  /\b(?:status(?:\s*code)?|http|api error)\s*[:=]?\s*(?:400|401|403)\b|\b401\s+unauthorized\b|\b403\s+forbidden\b|\b(?:authentication_error|permission_error|invalid_request_error)\b|\binvalid (?:x-)?api[ -]key\b|\bapi key not valid\b|\bincorrect api key\b|\bplease run \/login\b|\boauth token (?:has )?expired\b|\bcredit balance is too low\b|\b(?:UNAUTHENTICATED|PERMISSION_DENIED)\b/i;

/** Set-up and billing sentences of the three CLIs (codex, gemini): the same every episode until fixed. */
const SETUP_TEXT =
  /\bcheck your plan and billing details\b|\binsufficient_quota\b|\bmissing environment variable\b|\bmust specify the \w+ environment variable\b|\bnot (?:inside|running in) a trusted directory\b|\binvalid auth method selected\b/i;

const TRANSIENT_TEXT =
  /\b(?:status(?:\s*code)?|http|api error)\s*[:=]?\s*(?:429|5\d\d)\b|\bapi error: request rejected \((?:429|5\d\d)\)|\btoo many requests\b|\b(?:500 internal server error|502 bad gateway|503 service unavailable|504 gateway timeout)\b|\boverloaded(?:_error)?\b|\brate_limit_error\b|\brate[ -]limit(?:ed| exceeded| reached)\b|\bexceed(?:s|ed)? (?:your|the) (?:[\w'’-]+ ){0,2}rate limit\b|\bno messages returned\b|\b(?:RESOURCE_EXHAUSTED|UNAVAILABLE|DEADLINE_EXCEEDED)\b/i;

/** Codex words its 500/503 and a lost connection as prose without a status. */
const CAPACITY_TEXT = /\bselected model is at capacity\b|\bexperiencing high demand\b|\bwaiting for network\b/i;

const usageLimit = Object.assign((e: Evidence) => findUsageLimit(e.text) !== undefined, {
  patterns: [/usage[ _-]limit|hit your (?:[\w-]+ ){0,2}limit|limit reached|quota/i],
});

export const GENERIC_RULES: readonly Rule[] = [
  // Gemini CLI's wording of Google's per-day quota, which lifts at midnight Pacific.
  {
    id: 'generic.daily-quota',
    errorClass: 'usageLimit',
    when: text(/\bexhausted your daily quota\b/i),
    defaultReset: (now) => nextMidnight(now, GEMINI_QUOTA_ZONE),
  },
  { id: 'generic.usage-limit', errorClass: 'usageLimit', when: any(usageLimit, text(/\bTerminalQuotaError\b/)) },
  {
    id: 'generic.context-too-long',
    errorClass: 'contextTooLong',
    when: text(
      /\bprompt is too long\b|\bcontext_length_exceeded\b|\bmaximum context length\b|\bcontext window\b[^\n]{0,40}\bexceed|\bexceeds the context window\b|\bran out of room in the model's context window\b|\binput token count\b[^\n]{0,80}\bexceeds the maximum\b/i,
    ),
  },
  {
    id: 'generic.fatal',
    errorClass: 'fatal',
    when: any(status(400, 401, 403, 404), text(FATAL_TEXT), text(SETUP_TEXT)),
  },
  {
    id: 'generic.transient',
    errorClass: 'transient',
    when: any(status(429, 408), serverStatus, text(TRANSIENT_TEXT), text(CAPACITY_TEXT), text(NETWORK_TEXT)),
  },
];

const FATAL_STATUSES = new Set([400, 401, 403, 404]);

export function genericEvidence(out: FailureOutput, textFormat: boolean): Evidence {
  const facts = out.facts;
  const decisive = facts?.agentError === true;
  const texts = decisive
    ? [facts.errorMessage ?? '']
    : [
        ...(facts?.hints.texts ?? []),
        keepTail(out.stderr, CLASSIFY_TAIL_CHARS),
        keepTail(textFormat ? out.stdout : out.stray, CLASSIFY_TAIL_CHARS),
      ];
  const statuses = decisive ? (facts.apiStatus !== undefined ? [facts.apiStatus] : []) : (facts?.hints.statuses ?? []);
  return {
    exitCode: out.exitCode,
    // A bad key amid retries: the fatal status decides.
    status: statuses.find((s) => FATAL_STATUSES.has(s)) ?? statuses[0],
    kinds: new Set(facts?.errorKinds ?? []),
    message: decisive ? facts.errorMessage : undefined,
    text: texts.join('\n'),
    resetAtMs: facts?.resetAtMs,
  };
}
