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

/** `text` if it fits in `max` characters, else its first max − 1 characters and an ellipsis. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}${ELLIPSIS}`;
}

/** `text` if it fits in `max` characters, else an ellipsis and its last max − 1 characters. */
export function clipStart(text: string, max: number): string {
  return text.length <= max ? text : `${ELLIPSIS}${text.slice(text.length - max + 1)}`;
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
