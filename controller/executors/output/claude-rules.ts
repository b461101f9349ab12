// Claude Code (2.1.x): how a failed `claude -p` run is classified. In json/stream-json the result carries
// api_error_status, api_error_type, api_error (usage_limit_reached, connection_failed) and terminal_reason
// (prompt_too_long); stream-json adds a rejected rate_limit_event with the reset instant. In text mode the
// one line Claude prints is the error, in fixed forms: "API Error: 529 Overloaded…", "API Error: Request
// rejected (429) · …", "You've hit your 5-hour limit · resets 7:13am (UTC)", "Prompt is too long · …".
// Every rule is exercised by a capture in test/fixtures/agent-outputs/real/claude-*/.
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
  text,
  type Evidence,
  type FailureOutput,
  type Rule,
} from './rules.ts';

export const CLAUDE_RULES: readonly Rule[] = [
  // Subscribers: API keys get a plain 429 ("Request rejected (429)"), which is a rate limit.
  {
    id: 'claude.usage-limit',
    errorClass: 'usageLimit',
    when: any(
      kind('usage_limit_reached', 'rate_limit_rejected'),
      text(/\bYou(?:'|’)ve hit your (?:[\w-]+ ){0,2}limit\b|\busage limit reached\b/i),
    ),
  },
  // An API key's spend limit: a 400 that says when access returns ("… regain access on 2026-11-26 at 00:00 UTC").
  {
    id: 'claude.api-usage-limit',
    errorClass: 'usageLimit',
    when: text(/\breached your specified API usage limits\b/i),
  },
  {
    id: 'claude.context-too-long',
    errorClass: 'contextTooLong',
    when: any(kind('prompt_too_long'), text(/\bprompt is too long\b/i)),
  },
  {
    id: 'claude.not-logged-in',
    errorClass: 'fatal',
    when: text(/\bNot logged in\b|\bPlease run \/login\b/i),
    hint: 'give the agent ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN in agent.env',
  },
  {
    id: 'claude.auth',
    errorClass: 'fatal',
    when: any(
      status(401, 403),
      kind('authentication_error', 'permission_error', 'authentication_failed', 'billing_error'),
      text(
        /\bInvalid API key\b|\bFailed to authenticate\b|\bOAuth token (?:has )?expired\b|\bcredit balance is too low\b/i,
      ),
    ),
  },
  {
    id: 'claude.invalid-request',
    errorClass: 'fatal',
    when: any(status(400, 404, 413), kind('invalid_request_error', 'not_found_error', 'request_too_large')),
  },
  {
    id: 'claude.api-transient',
    errorClass: 'transient',
    when: any(
      status(408, 429),
      serverStatus,
      kind(
        'rate_limit_error',
        'overloaded_error',
        'api_error',
        'rate_limit',
        'server_error',
        'connection_failed',
        'timeout_error',
      ),
    ),
  },
  { id: 'claude.network', errorClass: 'transient', when: text(NETWORK_TEXT) },
];

// "API Error: 529 Overloaded", "API Error: 400 messages…", "API Error: Request rejected (429) · …".
const PRINTED_STATUS = /\bAPI Error: (?:Request rejected \()?(\d{3})\b/;

export function claudeEvidence(out: FailureOutput): Evidence {
  const facts = out.facts;
  const kinds = new Set(facts?.errorKinds ?? []);
  let message: string | undefined;
  let searchable: string;
  if (facts?.agentError) {
    // The result is the verdict: its text alone, never older chatter.
    message = facts.errorMessage;
    searchable = message ?? '';
  } else if (facts) {
    // A stream that ended without a result (killed, crashed): the last API error or retry, and stderr.
    // (Not the stray lines: there a cut-off JSON event would be the "sentence".)
    message = facts.hints.texts[0] ?? lastMeaningfulLine(out.stderr);
    searchable = [
      ...facts.hints.texts,
      keepTail(out.stderr, CLASSIFY_TAIL_CHARS),
      keepTail(out.stray, CLASSIFY_TAIL_CHARS),
    ].join('\n');
  } else {
    // Text mode: the one line printed is the error (stdout); a crash may add stderr.
    const line = lastMeaningfulLine(keepTail(out.stdout, CLASSIFY_TAIL_CHARS));
    message = line ?? lastMeaningfulLine(out.stderr);
    searchable = [line ?? '', keepTail(out.stderr, CLASSIFY_TAIL_CHARS)].join('\n');
  }
  return {
    exitCode: out.exitCode,
    status: facts?.apiStatus ?? facts?.hints.statuses[0] ?? statusFrom(searchable, PRINTED_STATUS),
    kinds,
    message,
    text: searchable,
    resetAtMs: facts?.resetAtMs,
  };
}
