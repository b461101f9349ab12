// Usage read from a model response as it passes through the gateway: the SSE events of a stream one by one
// (Anthropic message_start/message_delta, OpenAI response.completed or a chat chunk's usage, Gemini's
// usageMetadata), or a JSON body at its end. Pure: bytes in, counts out; nothing here holds a response
// beyond the event being read (an SSE event, or a JSON body up to MAX_JSON_BYTES).
import { MODEL_NAME_MAX, clip } from '../api/bounds.ts';
import type { TokenCounts } from '../api/bounds.ts';

export type Provider = 'anthropic' | 'openai' | 'gemini';

export interface Usage extends TokenCounts {
  /** The model the response names (pricing is per model); undefined when it names none. */
  model?: string;
}

export const ZERO_USAGE: Usage = Object.freeze({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0 });

/** A JSON body longer than this is forwarded whole but not metered from (no model answer is this long). */
export const MAX_JSON_BYTES = 16 * 1024 * 1024;
/** One SSE event longer than this is skipped, not buffered further. */
export const MAX_EVENT_BYTES = 4 * 1024 * 1024;

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined;
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);
const str = (v: unknown): string | undefined =>
  typeof v === 'string' && v.length > 0 ? clip(v, MODEL_NAME_MAX) : undefined;

/** Anthropic's usage object: input excludes the cache, which it reports beside it. */
function anthropicUsage(u: Json | undefined, model: string | undefined): Partial<Usage> {
  if (!u) return model ? { model } : {};
  const out: Partial<Usage> = model ? { model } : {};
  if ('input_tokens' in u) out.input = num(u.input_tokens);
  if ('output_tokens' in u) out.output = num(u.output_tokens);
  if ('cache_read_input_tokens' in u) out.cacheRead = num(u.cache_read_input_tokens);
  if ('cache_creation_input_tokens' in u) out.cacheWrite = num(u.cache_creation_input_tokens);
  return out;
}

/** OpenAI's usage (Responses or Chat Completions): input includes the cached and cache-write shares, split out here. */
function openaiUsage(u: Json | undefined, model: string | undefined): Partial<Usage> {
  if (!u) return model ? { model } : {};
  const input = num(u.input_tokens ?? u.prompt_tokens);
  const details = obj(u.input_tokens_details) ?? obj(u.prompt_tokens_details);
  const cached = Math.min(input, num(details?.cached_tokens));
  const cacheWrite = Math.min(input - cached, num(details?.cache_creation_tokens ?? details?.cache_write_tokens));
  return {
    ...(model ? { model } : {}),
    input: input - cached - cacheWrite,
    output: num(u.output_tokens ?? u.completion_tokens),
    cacheRead: cached,
    cacheWrite,
  };
}

/** Gemini's usageMetadata: promptTokenCount includes the cached share; thoughts are billed as output. */
function geminiUsage(u: Json | undefined, model: string | undefined): Partial<Usage> {
  if (!u) return model ? { model } : {};
  const prompt = num(u.promptTokenCount);
  const cached = Math.min(prompt, num(u.cachedContentTokenCount));
  return {
    ...(model ? { model } : {}),
    input: prompt - cached,
    output: num(u.candidatesTokenCount) + num(u.thoughtsTokenCount),
    cacheRead: cached,
    cacheWrite: 0,
  };
}

/**
 * What one parsed event (or a whole JSON body) says about usage; fields it does not mention are absent.
 * Every provider's figures are cumulative within a response, so a later event replaces an earlier one.
 */
export function usageOf(provider: Provider, data: unknown): Partial<Usage> {
  const d = obj(data);
  if (!d) return {};
  if (provider === 'anthropic') {
    if (d.type === 'message_start') {
      const message = obj(d.message);
      return anthropicUsage(obj(message?.usage), str(message?.model));
    }
    if (d.type === 'message_delta') return anthropicUsage(obj(d.usage), undefined);
    if (d.type === 'message') return anthropicUsage(obj(d.usage), str(d.model));
    return {};
  }
  if (provider === 'openai') {
    // Responses streaming: the final event carries the response with its usage.
    if (d.type === 'response.completed' || d.type === 'response.incomplete' || d.type === 'response.failed') {
      const response = obj(d.response);
      return openaiUsage(obj(response?.usage), str(response?.model));
    }
    // A Responses body (object "response") or a Chat Completions body or chunk (usage on the last one).
    if (d.usage !== undefined || d.object === 'response') return openaiUsage(obj(d.usage), str(d.model));
    return {};
  }
  return geminiUsage(obj(d.usageMetadata), str(d.modelVersion));
}

/** Later figures replace earlier ones field by field (cumulative counts), missing fields keep theirs. */
export function mergeUsage(a: Usage, b: Partial<Usage>): Usage {
  return { ...a, ...Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined)) };
}

/**
 * Splits an SSE byte stream into the `data:` payload of each event, across chunk boundaries. Events are
 * separated by a blank line (LF or CRLF); the data lines of one event are joined with "\n" (the SSE rule).
 * The bytes are searched as latin1 text (one character a byte: no decoder state, a chunk cut inside a UTF-8
 * character still splits right, and the blank lines and the needle are ASCII); only an event that is kept is
 * decoded as UTF-8.
 */
export class SseSplitter {
  private pending = '';
  /** Where the next search for a blank line may start: text before it was searched already (linear, not quadratic). */
  private searched = 0;
  private skipping = false;
  /** No event ended yet: a byte order mark may begin the stream (the SSE rule drops it). */
  private first = true;
  /** Only the events whose text contains it are read (the others are not split into lines). */
  private readonly needle?: string;

  constructor(needle?: string) {
    this.needle = needle;
  }

  push(chunk: Uint8Array): string[] {
    // latin1, not TextDecoder: a copy into a one-byte string, ~3x cheaper than UTF-8 decoding a 64 KiB chunk.
    this.pending += Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('latin1');
    const out: string[] = [];
    const text = this.pending;
    // Back up 2 characters: a "\n\r\n" may have begun at the end of the text searched before. Two string
    // searches instead of the regex /\r?\n\r?\n/: a third of the CPU of metering a 1 MiB stream went to it.
    const from = Math.max(0, this.searched - 2);
    let lfLf = text.indexOf('\n\n', from);
    let lfCrLf = text.indexOf('\n\r\n', from);
    let start = 0;
    for (;;) {
      const lf = lfLf < 0 ? lfCrLf : lfCrLf < 0 ? lfLf : Math.min(lfLf, lfCrLf);
      if (lf < 0) break;
      // The CR of a CRLF before the blank line is not part of the event.
      const event = text.slice(start, lf > start && text.charCodeAt(lf - 1) === 13 ? lf - 1 : lf);
      start = lf + (lf === lfLf ? 2 : 3);
      if (lfLf >= 0 && lfLf < start) lfLf = text.indexOf('\n\n', start);
      if (lfCrLf >= 0 && lfCrLf < start) lfCrLf = text.indexOf('\n\r\n', start);
      if (this.skipping) this.skipping = false;
      else this.keep(event, out);
      this.first = false;
    }
    if (start > 0) this.pending = this.pending.slice(start);
    this.searched = this.pending.length;
    // An event that never ends is not kept growing: its rest is dropped up to the next blank line.
    if (this.pending.length > MAX_EVENT_BYTES) {
      this.pending = '';
      this.searched = 0;
      this.skipping = true;
    }
    return out;
  }

  /** The last event, when the stream ended without its blank line. */
  end(): string[] {
    const rest = this.pending;
    this.pending = '';
    this.searched = 0;
    const out: string[] = [];
    if (!this.skipping) this.keep(rest, out);
    return out;
  }

  /** An event (latin1) whose text holds the needle: decoded as UTF-8, its data added to `out`. */
  private keep(event: string, out: string[]): void {
    if (this.needle && !event.includes(this.needle)) return;
    const text = Buffer.from(event, 'latin1').toString('utf8');
    const data = dataOf(this.first && text.startsWith('\uFEFF') ? text.slice(1) : text);
    if (data !== undefined) out.push(data);
  }
}

function dataOf(event: string): string | undefined {
  const lines = event.split(/\r?\n/).filter((l) => l.startsWith('data:'));
  if (lines.length === 0) return undefined;
  return lines.map((l) => l.slice(l.startsWith('data: ') ? 6 : 5)).join('\n');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Meters one response as its bytes pass: an event stream event by event, any other body (JSON, or Gemini's
 * JSON array stream) at its end. `done()` is the response's usage; a response cut short keeps what it said.
 */
export class UsageMeter {
  private usage: Usage = { ...ZERO_USAGE };
  private readonly sse?: SseSplitter;
  private chunks: Uint8Array[] = [];
  private size = 0;
  private readonly provider: Provider;

  constructor(provider: Provider, contentType: string | undefined, model?: string) {
    this.provider = provider;
    if (model) this.usage.model = model;
    // Usage is always under a key "usage" or "usageMetadata": events without that text (most of a stream, the
    // text deltas) are neither split into lines nor parsed. Only a shortcut: an event with it is read by usageOf.
    if (/text\/event-stream/i.test(contentType ?? '')) this.sse = new SseSplitter('"usage');
  }

  push(chunk: Uint8Array): void {
    if (this.sse) {
      this.take(this.sse.push(chunk));
      return;
    }
    this.size += chunk.length;
    if (this.size <= MAX_JSON_BYTES) this.chunks.push(chunk);
    else this.chunks = [];
  }

  done(): Usage {
    if (this.sse) this.take(this.sse.end());
    else if (this.size > 0 && this.size <= MAX_JSON_BYTES) {
      const body = parseJson(Buffer.concat(this.chunks).toString('utf8'));
      // Gemini's streamGenerateContent without alt=sse is a JSON array of chunks.
      for (const part of Array.isArray(body) ? body : [body])
        this.usage = mergeUsage(this.usage, usageOf(this.provider, part));
      this.chunks = [];
    }
    return this.usage;
  }

  private take(events: string[]): void {
    for (const data of events) this.usage = mergeUsage(this.usage, usageOf(this.provider, parseJson(data)));
  }
}
