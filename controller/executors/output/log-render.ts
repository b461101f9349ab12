// `episodic logs` for a person: an episode log (the agent's stdout as it printed it, `[stderr] ` lines and our
// `--- episodic: … ---` notes) rendered readably — the agent's messages, one line per tool call, the result
// with its cost — for Claude Code stream-json/json, Codex --json and Gemini CLI stream-json/json; plain text
// as it is. Everything here is agent-written and untrusted: every line goes through printable(). It streams:
// a line past LOG_LINE_MAX_BYTES is never held or parsed whole, but shown cut as text, with its size.
import { ELLIPSIS, LOG_LINE_MAX_BYTES } from '../../api/bounds.ts';
import { countedUSD } from '../../api/episode-record.ts';
import type { EpisodeRecord } from '../../api/episode-record.ts';
import { printable } from '../../util/printable.ts';
import { asNumber, asObject, asString, type JsonObject } from './json-fields.ts';
import { createJsonLineParser, type JsonLineParser } from './json-lines.ts';
import { type LogLine, LogLineSplitter } from './log-lines.ts';

/** A message line longer than this is cut: readable output, not a dump (--raw has the bytes). */
const MAX_TEXT_LINE = 4000;

export class LogRenderer {
  private readonly lines: LogLineSplitter;
  private readonly parser: JsonLineParser;
  /** Gemini streams its answer as deltas: joined into one message before it is shown. */
  private delta = '';
  /** Whether the agent's words were shown: claude's json format has them only in its result. */
  private sawMessage = false;

  private readonly write: (text: string) => void;
  private readonly width: number;

  constructor(write: (text: string) => void, width: number) {
    this.write = write;
    this.width = width;
    this.parser = createJsonLineParser(
      { onValue: (v) => this.value(v), onText: (line) => this.text(line) },
      LOG_LINE_MAX_BYTES,
    );
    this.lines = new LogLineSplitter(LOG_LINE_MAX_BYTES, (line) => this.logLine(line));
  }

  /** A piece of the log's bytes, cut anywhere: whole lines are rendered, the rest waits for more or end(). */
  push(chunk: Uint8Array): void {
    this.lines.push(chunk);
  }

  end(): void {
    this.lines.end();
    this.parser.end();
    this.flushDelta();
  }

  private logLine(line: LogLine): void {
    if (!line.cut) {
      this.parser.line(line.text);
      return;
    }
    // Too long to parse: a document it was part of is given up (shown as text), the line shown as its head.
    this.parser.end();
    this.flushDelta();
    const marker = `${ELLIPSIS} ${line.bytes.toLocaleString('en-US')} bytes, cut`;
    this.write(`${this.fit(line.text, MAX_TEXT_LINE - marker.length, '')}${marker}\n`);
  }

  private text(line: string): void {
    this.flushDelta();
    this.emit(line, MAX_TEXT_LINE);
  }

  private value(v: unknown): void {
    const o = asObject(v);
    const type = asString(o?.type);
    if (!o || (type === 'message' && o.delta === true && o.role === 'assistant')) {
      if (o) this.delta += asString(o.content) ?? '';
      else this.emit(JSON.stringify(v), this.width);
      return;
    }
    this.flushDelta();
    const lines = type === undefined ? geminiDocument(o) : (claude(o, type) ?? codex(o, type) ?? gemini(o, type));
    if (lines === undefined) this.emit(JSON.stringify(o), this.width);
    const answer = type === 'result' && o.is_error !== true && !this.sawMessage ? message(asString(o.result)) : [];
    for (const l of [...answer, ...(lines ?? [])]) this.line(l);
  }

  private line(l: Line): void {
    if (l.kind === 'message') this.sawMessage = true;
    if (l.kind === 'message') for (const part of l.text.trim().split(/\r?\n/)) this.emit(part, MAX_TEXT_LINE);
    else this.emit(`${/^ */.exec(l.text)?.[0] ?? ''}${l.text.replace(/\s+/g, ' ').trim()}`, this.width);
  }

  private flushDelta(): void {
    if (!this.delta) return;
    const text = this.delta;
    this.delta = '';
    this.line({ kind: 'message', text });
  }

  /** One terminal line: escaped, then cut to `max` characters. */
  private emit(text: string, max: number): void {
    this.write(`${this.fit(text, max, ELLIPSIS)}\n`);
  }

  /** `text` escaped and, when it does not fit in `max` characters, cut and ended with `mark`. */
  private fit(text: string, max: number, mark: string): string {
    // Cut before escaping: what is shown of a long line is only its head.
    const safe = printable(text.slice(0, MAX_TEXT_LINE * 2).replace(/\t/g, '  '), MAX_TEXT_LINE * 2);
    // One short of the width: a line that fills the terminal exactly wraps on some.
    return safe.length >= max ? `${safe.slice(0, Math.max(1, max - 2))}${mark}` : safe;
  }
}

/** A message keeps its own lines; a summary (a tool call, a result) is one line cut to the terminal width. */
type Line = { kind: 'message' | 'summary'; text: string };
const message = (text: string | undefined): Line[] => (text?.trim() ? [{ kind: 'message', text }] : []);
const summary = (text: string): Line => ({ kind: 'summary', text });

/** A tool's input in a few words: its path, command, pattern or URL when it has one, else its JSON. */
function toolArgs(input: unknown): string {
  const o = asObject(input);
  if (!o) return input === undefined ? '' : JSON.stringify(input);
  for (const key of ['command', 'file_path', 'path', 'pattern', 'url', 'query', 'description', 'prompt']) {
    const value = asString(o[key]);
    if (value) return value;
  }
  return JSON.stringify(o);
}

function seconds(ms: unknown): string {
  const n = asNumber(ms);
  return n === undefined ? '' : ` · ${(n / 1000).toFixed(1)} s`;
}

function tokens(input: unknown, output: unknown): string {
  const i = asNumber(input);
  const o = asNumber(output);
  return i === undefined && o === undefined ? '' : ` · tokens in ${i ?? 0}, out ${o ?? 0}`;
}

/** Claude Code stream-json (and json: the result object alone). */
function claude(o: JsonObject, type: string): Line[] | undefined {
  if (type === 'system') {
    if (o.subtype !== 'init') return [summary(`[system] ${asString(o.subtype) ?? ''}`)];
    return [summary(`[init] claude ${asString(o.model) ?? ''} in ${asString(o.cwd) ?? '?'}`)];
  }
  if (type === 'assistant' || type === 'user') {
    const content = asObject(o.message)?.content;
    if (!Array.isArray(content)) return type === 'user' ? [] : undefined;
    return content.flatMap((block): Line[] => {
      const b = asObject(block);
      if (b?.type === 'text' && type === 'assistant') return message(asString(b.text));
      if (b?.type === 'tool_use') return [summary(`→ ${asString(b.name) ?? 'tool'} ${toolArgs(b.input)}`)];
      if (b?.type === 'tool_result')
        return [summary(`  ← ${b.is_error === true ? 'error: ' : ''}${toolResult(b.content)}`)];
      return [];
    });
  }
  if (type === 'result' && !('stats' in o)) {
    const cost = asNumber(o.total_cost_usd);
    const usage = asObject(o.usage);
    const head = `[result] ${o.is_error === true ? 'error' : (asString(o.subtype) ?? 'done')}`;
    const turns = asNumber(o.num_turns) === undefined ? '' : ` · ${o.num_turns} turns`;
    const line = `${head}${cost === undefined ? '' : ` · $${cost.toFixed(4)}`}${turns}${seconds(o.duration_ms)}${tokens(usage?.input_tokens, usage?.output_tokens)}`;
    return [summary(line), ...(o.is_error === true ? message(asString(o.result)) : [])];
  }
  if (type === 'rate_limit_event') {
    const info = asObject(o.rate_limit_info);
    return [summary(`[rate limit] ${asString(info?.status) ?? ''} ${asString(info?.rateLimitType) ?? ''}`)];
  }
  if (type === 'stream_event') return [];
  return undefined;
}

function toolResult(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((c) => asString(asObject(c)?.text) ?? '').join(' ');
  return JSON.stringify(content ?? '');
}

/** Codex `exec --json` events. */
function codex(o: JsonObject, type: string): Line[] | undefined {
  if (type === 'thread.started' || type === 'turn.started' || type === 'item.started' || type === 'item.updated')
    return [];
  if (type === 'turn.completed') {
    const u = asObject(o.usage);
    return [summary(`[result] turn completed${tokens(u?.input_tokens, u?.output_tokens)}`)];
  }
  if (type === 'turn.failed') return [summary(`[result] turn failed: ${asString(asObject(o.error)?.message) ?? ''}`)];
  if (type === 'error') return [summary(`[error] ${asString(o.message) ?? ''}`)];
  if (type !== 'item.completed') return undefined;
  const item = asObject(o.item) ?? {};
  switch (item.type) {
    case 'agent_message':
      return message(asString(item.text));
    case 'reasoning':
      return [summary(`[thinking] ${asString(item.text) ?? ''}`)];
    case 'command_execution':
      return [summary(`→ $ ${asString(item.command) ?? ''} (exit ${asNumber(item.exit_code) ?? '?'})`)];
    case 'file_change': {
      const changes = Array.isArray(item.changes) ? item.changes.map(asObject) : [];
      return [
        summary(`→ edit ${changes.map((c) => `${asString(c?.path) ?? '?'} (${asString(c?.kind) ?? ''})`).join(', ')}`),
      ];
    }
    case 'mcp_tool_call':
      return [summary(`→ ${asString(item.server) ?? 'mcp'}.${asString(item.tool) ?? 'tool'}`)];
    case 'web_search':
      return [summary(`→ search ${asString(item.query) ?? ''}`)];
    case 'error':
      return [summary(`[error] ${asString(item.message) ?? ''}`)];
    default:
      return [summary(`[${asString(item.type) ?? 'item'}]`)];
  }
}

/** Gemini CLI stream-json events (assistant deltas are joined before they get here). */
function gemini(o: JsonObject, type: string): Line[] | undefined {
  switch (type) {
    case 'init':
      return [summary(`[init] gemini ${asString(o.model) ?? ''}`)];
    case 'message':
      return o.role === 'assistant' ? message(asString(o.content)) : [];
    case 'tool_use':
      return [summary(`→ ${asString(o.tool_name) ?? 'tool'} ${toolArgs(o.parameters)}`)];
    case 'tool_result':
      return [
        summary(`  ← ${asString(o.status) ?? ''}: ${asString(o.output) ?? asString(asObject(o.error)?.message) ?? ''}`),
      ];
    case 'error':
      return [summary(`[error] ${asString(o.message) ?? ''}`)];
    case 'result': {
      const stats = asObject(o.stats);
      const error = asString(asObject(o.error)?.message);
      const line = `[result] ${asString(o.status) ?? 'done'}${seconds(stats?.duration_ms)}${tokens(stats?.input_tokens, stats?.output_tokens)}`;
      return [summary(line), ...message(error)];
    }
    default:
      return undefined;
  }
}

/** Gemini CLI --output-format json: one document, `{response, stats}` or `{error}`. */
function geminiDocument(o: JsonObject): Line[] | undefined {
  if (!('response' in o) && !('error' in o)) return undefined;
  const error = asObject(o.error);
  return [
    ...message(asString(o.response)),
    summary(`[result] ${error ? `error: ${asString(error.message) ?? ''}` : 'done'}`),
  ];
}

/** `=== default/alpha episode 2: succeeded, exit 0, $0.0734, finished 2026-11-25T18:00:00Z ===` */
export function episodeHeader(task: string, episode: number, record: EpisodeRecord | undefined): string {
  const facts = record
    ? [
        record.outcome,
        record.exitCode === null ? undefined : `exit ${record.exitCode}`,
        `$${countedUSD(record).toFixed(4)}`,
        record.finishedAt ? `finished ${record.finishedAt.replace(/\.\d+Z$/, 'Z')}` : undefined,
      ].filter(Boolean)
    : ['no record yet (running, or ended without one)'];
  return printable(`=== ${task} episode ${episode}: ${facts.join(', ')} ===`);
}
