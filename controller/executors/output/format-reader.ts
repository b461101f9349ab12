// What each JSON format reader (claude, codex, gemini) distils from its event stream.
import type { Tokens } from '../../api/agent-task.ts';
import type { JsonObject } from './json-fields.ts';

export type JsonFormat = 'claude' | 'codex' | 'gemini';

export interface FormatFacts {
  /** The agent itself reported failure (claude is_error, codex turn.failed, gemini error/status). */
  agentError: boolean;
  /** The decisive error text; set only together with agentError. */
  errorMessage?: string;
  /** HTTP status of the decisive API error, when the agent reports one. */
  apiStatus?: number;
  /** Machine-readable kinds of the error from structured fields (lowercased), e.g. usage_limit_reached. */
  errorKinds?: string[];
  /** When a usage limit lifts, from a structured field (ms since the epoch). */
  resetAtMs?: number;
  /** Non-decisive clues (retry chatter) for when the run died without a verdict. */
  hints: { texts: string[]; statuses: number[] };
  /** The agent's final text: where completion signals count. */
  finalText?: string;
  tokens: Tokens;
  /** Reported cost in USD; undefined when the output has none (then pricing applies). */
  costUSD?: number;
  /** The agent printed its final verdict (claude's result, codex's end of turn, gemini's result or document). */
  final?: boolean;
}

export interface FormatReader {
  readonly format: JsonFormat;
  /** Consumes one parsed JSON object; returns whether it was an event of this format. */
  event(value: JsonObject): boolean;
  facts(): FormatFacts;
}

/** Cap for accumulated final texts (streamed deltas): sentinels and status blocks sit at the end. */
export const FINAL_TEXT_MAX_CHARS = 64 * 1024;
