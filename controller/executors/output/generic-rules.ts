// Agents episodic has no table for (output: text or auto on plain text): wordings common to HTTP APIs and
// CLIs. Precedence: usageLimit > contextTooLong > fatal > transient.
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
import { findUsageLimit } from './usage-limit.ts';

const FATAL_TEXT =
  /\b(?:status(?:\s*code)?|http|api error)\s*[:=]?\s*(?:400|401|403)\b|\b401\s+unauthorized\b|\b403\s+forbidden\b|\b(?:authentication_error|permission_error|invalid_request_error)\b|\binvalid (?:x-)?api[ -]key\b|\bapi key not valid\b|\bincorrect api key\b|\bplease run \/login\b|\boauth token (?:has )?expired\b|\bcredit balance is too low\b|\b(?:UNAUTHENTICATED|PERMISSION_DENIED)\b/i;

const TRANSIENT_TEXT =
  /\b(?:status(?:\s*code)?|http|api error)\s*[:=]?\s*(?:429|5\d\d)\b|\btoo many requests\b|\b(?:500 internal server error|502 bad gateway|503 service unavailable|504 gateway timeout)\b|\boverloaded(?:_error)?\b|\brate_limit_error\b|\brate[ -]limit(?:ed| exceeded| reached)\b|\bno messages returned\b|\b(?:RESOURCE_EXHAUSTED|UNAVAILABLE|DEADLINE_EXCEEDED)\b/i;

const usageLimit = Object.assign((e: Evidence) => findUsageLimit(e.text) !== undefined, {
  patterns: [/usage[ _-]limit|hit your (?:[\w-]+ ){0,2}limit|limit reached|quota/i],
});

export const GENERIC_RULES: readonly Rule[] = [
  { id: 'generic.usage-limit', errorClass: 'usageLimit', when: usageLimit },
  {
    id: 'generic.context-too-long',
    errorClass: 'contextTooLong',
    when: text(
      /\bprompt is too long\b|\bcontext_length_exceeded\b|\bmaximum context length\b|\bcontext window\b[^\n]{0,40}\bexceed|\bexceeds the context window\b/i,
    ),
  },
  { id: 'generic.fatal', errorClass: 'fatal', when: any(status(400, 401, 403, 404), text(FATAL_TEXT)) },
  {
    id: 'generic.transient',
    errorClass: 'transient',
    when: any(status(429, 408), serverStatus, text(TRANSIENT_TEXT), text(NETWORK_TEXT)),
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
