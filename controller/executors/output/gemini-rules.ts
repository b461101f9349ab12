// Gemini CLI (0.61): how a failed `gemini` run is classified. Its documented exit codes come first (41
// auth, 42 input, 44 sandbox, 52 config, 55 untrusted folder; 53 turn limit is an ordinary failure); an API
// error exits with the HTTP status mod 256 in json/stream-json (400→144, 429→173, 503→247) and 1 in text
// mode. --output-format json carries {error:{type,message,code}}, stream-json a result {status:"error",
// error:{message:"[API Error: …]"}} without a code; the API's google.rpc.Status body is often inside the
// message as JSON. stderr names the error class ("TerminalQuotaError: You have exhausted your daily quota…")
// and ends with noise ("An unexpected critical error occurred:[object Object]", stack frames), never used
// as the message. Every rule is exercised by a capture in test/fixtures/agent-outputs/real/gemini-*/.
import { findApiErrorBody } from './api-error-json.ts';
import { asNumber, asObject, asString, keepTail } from './json-fields.ts';
import {
  any,
  CLASSIFY_TAIL_CHARS,
  exit,
  kind,
  lastBlock,
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
import { nextMidnight } from './zoned-time.ts';

/** Google's per-day quotas reset at midnight Pacific time. */
export const GEMINI_QUOTA_ZONE = 'America/Los_Angeles';

export const GEMINI_RULES: readonly Rule[] = [
  {
    id: 'gemini.daily-quota',
    errorClass: 'usageLimit',
    when: text(/\bexhausted your daily quota\b|\bPerDay\b/i),
    defaultReset: (now) => nextMidnight(now, GEMINI_QUOTA_ZONE),
  },
  {
    id: 'gemini.context-too-long',
    errorClass: 'contextTooLong',
    when: text(/\binput token count\b[^\n]{0,80}\bexceeds the maximum\b|\bexceeds the maximum number of tokens\b/i),
  },
  // Set-up: gemini's own sentences say what to do, except "Invalid auth method selected."
  {
    id: 'gemini.untrusted-directory',
    errorClass: 'fatal',
    when: any(exit(55), text(/\bnot running in a trusted directory\b/i)),
  },
  {
    id: 'gemini.auth-method',
    errorClass: 'fatal',
    when: text(/\bInvalid auth method selected\b/i),
    hint: 'set security.auth.selectedType to "gemini-api-key" in $HOME/.gemini/settings.json of the agent',
  },
  {
    id: 'gemini.bad-key',
    errorClass: 'fatal',
    when: any(kind('api_key_invalid'), text(/\bAPI key not valid\b/i)),
    hint: 'check GEMINI_API_KEY in agent.env',
  },
  { id: 'gemini.setup', errorClass: 'fatal', when: exit(41, 42, 44, 52) },
  // The turn limit (53), a failed tool (54), a cancel (130): the episode failed, nothing to wait out or fix.
  { id: 'gemini.turn-limit', errorClass: 'none', when: any(exit(53, 54, 130), text(/\bReached max session turns\b/i)) },
  // Quota errors gemini gives up on without "daily": a long suggested retry ("retry after 3600s").
  { id: 'gemini.terminal-quota', errorClass: 'usageLimit', when: kind('terminalquotaerror') },
  { id: 'gemini.auth', errorClass: 'fatal', when: any(status(401, 403), kind('permission_denied', 'unauthenticated')) },
  {
    id: 'gemini.invalid-request',
    errorClass: 'fatal',
    when: any(status(400, 404), kind('invalid_argument', 'not_found', 'failed_precondition', 'modelnotfounderror')),
  },
  {
    id: 'gemini.transient',
    errorClass: 'transient',
    when: any(
      status(408, 429, 499),
      serverStatus,
      kind('resource_exhausted', 'unavailable', 'internal', 'deadline_exceeded', 'retryablequotaerror'),
      text(/\bmodel is overloaded\b|\bResource has been exhausted\b/i),
      text(/\b(?:RESOURCE_EXHAUSTED|UNAVAILABLE|INTERNAL|DEADLINE_EXCEEDED)\b/),
    ),
  },
  { id: 'gemini.network', errorClass: 'transient', when: any(text(NETWORK_TEXT), text(/\[API Error: terminated\]/)) },
];

// "Error when talking to Gemini API Full report available at: /path/report.json TerminalQuotaError: You …"
const TALKING =
  /Error when talking to Gemini API(?: Full report available at: \S+)?\s+(_?[A-Za-z]*Error)?:?\s*([^\n]*)/;

/** An exit code that is an HTTP status mod 256 (json and stream-json modes): 144..255 ↔ 400..511. */
function statusFromExit(code: number | null): number | undefined {
  return code !== null && code >= 144 && code <= 255 ? code + 256 : undefined;
}

/**
 * --output-format json prints its error document on stderr, not stdout: {"session_id", "error": {type,
 * message, code}}, pretty-printed, after the stack trace. The last top-level "{" line starts it.
 */
function stderrErrorDocument(text: string): { message?: string; code?: number; type?: string } | undefined {
  // Gemini may print it twice, the second time behind "[ERROR] ".
  const starts = [...text.matchAll(/(?:^|\n)(?:\[ERROR\] )?\{\n/g)].map((m) => m.index + m[0].indexOf('{'));
  for (const at of starts.reverse().slice(0, 4)) {
    try {
      const end = text.indexOf('\n}', at);
      const error = asObject(asObject(JSON.parse(text.slice(at, end < 0 ? undefined : end + 2)))?.error);
      if (error) return { message: asString(error.message), code: asNumber(error.code), type: asString(error.type) };
    } catch {
      // not the document (or cut): an earlier one
    }
  }
  return undefined;
}

/** "[API Error: X]\nPlease wait…" → X (stream-json and text wrap the API's message this way). */
function unwrap(message: string): string {
  const m = /^\[API Error: ([\s\S]*)\]/.exec(message.trim());
  return m ? m[1] : message;
}

// Start-up chatter on stderr that is never the error.
const CHATTER = /^(?:Warning: |Ripgrep is not available|\[STARTUP\]|Attempt \d+ failed|Loaded cached credentials)/;

export function geminiEvidence(out: FailureOutput): Evidence {
  const facts = out.facts;
  const stderr = stripAnsi(keepTail(out.stderr, CLASSIFY_TAIL_CHARS));
  const quiet = stderr
    .split('\n')
    .filter((l) => !CHATTER.test(l))
    .map((l) => l.replace(/^\[ERROR\] /, ''))
    .filter((l, i, all) => l !== all[i - 1])
    .join('\n');
  const kinds = new Set<string>(facts?.errorKinds ?? []);
  const talking = TALKING.exec(stderr);
  if (talking?.[1]) kinds.add(talking[1].replace(/^_+/, '').toLowerCase());
  const document = facts ? undefined : stderrErrorDocument(stderr);
  if (document?.type && !/^(error|unknown)$/i.test(document.type)) kinds.add(document.type.toLowerCase());
  const reported = facts?.agentError ? facts.errorMessage : document?.message;
  const reportedStatus =
    facts?.apiStatus ??
    (document?.code !== undefined && document.code >= 400 && document.code <= 599 ? document.code : undefined);
  // The sentence: the structured error, else what stderr says it was talking about, else its last line.
  let message =
    reported !== undefined ? unwrap(reported) : talking?.[2] || lastBlock(quiet) || lastMeaningfulLine(out.stray);
  const body = findApiErrorBody(message ?? '') ?? findApiErrorBody(stderr);
  for (const k of body?.kinds ?? []) kinds.add(k);
  if (body?.message && (message === undefined || message.trimStart().startsWith('{'))) message = body.message;
  // "terminated" alone says little; undici's cause says what happened ("other side closed").
  const cause = /\[cause\]: (?:\w+: )?([^\n]{1,120})/.exec(stderr)?.[1];
  if (message && message.trim().length < 20 && cause) message = `${message.trim()} (${cause.trim()})`;
  const searchable = [reported ?? '', message ?? '', stderr].join('\n');
  const bodyStatus = body?.code !== undefined && body.code >= 400 ? body.code : undefined;
  return {
    exitCode: out.exitCode,
    status:
      reportedStatus ??
      bodyStatus ??
      statusFromExit(out.exitCode) ??
      statusFrom(searchable, /\bgot status:? (\d{3})\b/) ??
      statusFrom(stderr, /^\s*status: (\d{3})\s*$/m),
    kinds,
    message: message?.trim(),
    text: searchable,
  };
}
