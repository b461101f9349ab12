// Defensive readers for untrusted JSON: agents change their output between versions, so every field is
// optional and of unknown type until checked.
import type { Tokens } from '../../api/agent-task.ts';

export type JsonObject = Record<string, unknown>;

export function asObject(value: unknown): JsonObject | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : undefined;
}

export function asString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function asNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** A non-negative integer token count; anything else counts as 0. */
export function count(value: unknown): number {
  const n = asNumber(value);
  return n !== undefined && n > 0 && n <= MAX_TOKENS ? Math.round(n) : 0;
}

// Past these an agent's report is broken, not spend: summed into status it would overflow or poison caps.
/** USD for one episode. */
export const MAX_EPISODE_COST_USD = 10_000;
/** Tokens of one kind in one episode. */
export const MAX_TOKENS = 1e10;

/** A cost an agent reported, or undefined when it is missing, negative or absurd. */
export function asCost(value: unknown): number | undefined {
  const n = asNumber(value);
  return n !== undefined && n >= 0 && n <= MAX_EPISODE_COST_USD ? n : undefined;
}

export function zeroTokens(): Tokens {
  return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
}

export function addTokens(into: Tokens, add: Tokens): void {
  into.input += add.input;
  into.output += add.output;
  into.cacheRead += add.cacheRead;
  into.cacheWrite += add.cacheWrite;
}

/** An HTTP status worth classifying (4xx/5xx), else undefined. */
export function httpStatus(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^\d{3}$/.test(value) ? Number(value) : asNumber(value);
  return n !== undefined && n >= 400 && n <= 599 ? n : undefined;
}

/** Keeps the last `max` characters: final texts only matter at their end (sentinel, status block). */
export function keepTail(text: string, max: number): string {
  return text.length > max ? text.slice(text.length - max) : text;
}

/** Appends and trims to the last `max` characters only past 2 × max, so many small deltas stay O(n). */
export function appendTail(text: string, more: string, max: number): string {
  const joined = text + more;
  return joined.length > 2 * max ? joined.slice(joined.length - max) : joined;
}
