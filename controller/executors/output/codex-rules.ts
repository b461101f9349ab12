// OpenAI Codex (0.169): how a failed `codex exec` run is classified. Codex has no status field: --json
// ends a failed turn with turn.failed {error.message}, plain mode prints "ERROR: <message>" lines on stderr,
// and the message words most API errors as prose without a status ("Selected model is at capacity" for a
// 503, "We're currently experiencing high demand" for a 500). Where it does print one, it is in a fixed
// form ("unexpected status 401 Unauthorized: …", "exceeded retry limit, last status: 429 …") or the API's
// JSON error body verbatim (400s). Every rule is exercised by a capture in
// test/fixtures/agent-outputs/real/codex-*/.
import { findApiErrorBody } from './api-error-json.ts';
import { keepTail } from './json-fields.ts';
import {
  any,
  CLASSIFY_TAIL_CHARS,
  kind,
  lastMeaningfulLine,
  NETWORK_TEXT,
  serverStatus,
  status,
  statusFrom,
  stripAnsi,
  text,
  type Evidence,
  type FailureOutput,
  type Rule,
} from './rules.ts';

export const CODEX_RULES: readonly Rule[] = [
  // "try again at 7:13 AM" / "at Nov 26th, 2026 5:13 AM": codex's local time, no zone (see resetTimeZone).
  {
    id: 'codex.usage-limit',
    errorClass: 'usageLimit',
    when: any(kind('usage_limit_reached'), text(/\bYou(?:'|’)ve hit your usage limit\b/i)),
  },
  {
    id: 'codex.context-too-long',
    errorClass: 'contextTooLong',
    when: any(
      kind('context_length_exceeded'),
      text(/\bran out of room in the model's context window\b|\bexceeds the context window\b/i),
    ),
  },
  {
    id: 'codex.billing',
    errorClass: 'fatal',
    when: any(
      kind('insufficient_quota'),
      text(/\bQuota exceeded\. Check your plan and billing details\b|\bout of credits\b|\bspend cap\b/i),
    ),
  },
  // Its own sentences say what to fix: --skip-git-repo-check, OPENAI_API_KEY.
  { id: 'codex.untrusted-directory', errorClass: 'fatal', when: text(/\bNot inside a trusted directory\b/i) },
  { id: 'codex.missing-key', errorClass: 'fatal', when: text(/\bMissing environment variable\b/i) },
  { id: 'codex.auth', errorClass: 'fatal', when: any(status(401, 403), kind('invalid_api_key')) },
  { id: 'codex.invalid-request', errorClass: 'fatal', when: any(status(400, 404, 413), kind('invalid_request_error')) },
  {
    id: 'codex.transient',
    errorClass: 'transient',
    when: any(
      status(408, 429),
      serverStatus,
      kind('server_error', 'server_is_overloaded', 'rate_limit_exceeded'),
      text(/\bSelected model is at capacity\b|\bexperiencing high demand\b|\bexceeded retry limit\b|\bReconnecting\b/i),
    ),
  },
  { id: 'codex.network', errorClass: 'transient', when: text(NETWORK_TEXT) },
];

const PRINTED_STATUS = /\b(?:unexpected status|last status:)\s*(\d{3})\b/;

/** Plain mode: the "ERROR: " lines of stderr; the rest is the banner, the prompt echo and the agent's work. */
function errorLines(stderr: string): string[] {
  const lines = stripAnsi(stderr).split('\n');
  const errors = lines.filter((l) => l.startsWith('ERROR: ')).map((l) => l.slice('ERROR: '.length).trim());
  // Before the session starts (no banner yet) codex prints its complaint on its own, without a prefix.
  if (errors.length === 0 && !/^OpenAI Codex v/m.test(stderr)) {
    const line = lastMeaningfulLine(stderr);
    if (line) errors.push(line);
  }
  return errors;
}

export function codexEvidence(out: FailureOutput): Evidence {
  const facts = out.facts;
  let message: string | undefined;
  let searchable: string;
  if (facts?.agentError) {
    message = facts.errorMessage;
    searchable = message ?? '';
  } else {
    // No turn.failed (plain mode, or --json that never got that far): codex's own error lines.
    const lines = [...(facts?.hints.texts ?? []), ...errorLines(keepTail(out.stderr, CLASSIFY_TAIL_CHARS))];
    const stray = lastMeaningfulLine(keepTail(out.stray, CLASSIFY_TAIL_CHARS));
    if (stray) lines.push(stray);
    message = lines.at(-1);
    searchable = lines.join('\n');
  }
  const body = findApiErrorBody(searchable);
  return {
    exitCode: out.exitCode,
    status:
      statusFrom(searchable, PRINTED_STATUS) ?? (body?.code !== undefined && body.code >= 400 ? body.code : undefined),
    kinds: new Set(body?.kinds ?? []),
    // A raw JSON body is not a sentence: show the message inside it.
    message: body?.message && message?.trimStart().startsWith('{') ? body.message : message,
    text: searchable,
  };
}
