// Recognises which agent CLI printed a JSON value, for `output: auto`, and which CLI a command runs.
import type { JsonFormat } from './format-reader.ts';
import { asObject, type JsonObject } from './json-fields.ts';

const GEMINI_STREAM_TYPES = new Set(['init', 'message', 'tool_use', 'tool_result', 'error', 'result']);
const CLAUDE_TYPES = new Set(['system', 'assistant', 'user', 'result', 'stream_event']);

export function detectFormat(value: JsonObject): JsonFormat | undefined {
  const type = value.type;
  if (typeof type === 'string') {
    // Gemini stream events carry a timestamp; claude's carry session_id (both have a "result" type).
    if (GEMINI_STREAM_TYPES.has(type) && typeof value.timestamp === 'string') return 'gemini';
    if (CLAUDE_TYPES.has(type) && (typeof value.session_id === 'string' || 'is_error' in value)) return 'claude';
    if (/^(thread|turn|item)\.[a-z_]+$/.test(type)) return 'codex';
    return undefined;
  }
  if ('response' in value && ('stats' in value || 'session_id' in value)) return 'gemini';
  if ('stats' in value && asObject(value.stats)?.models !== undefined) return 'gemini';
  if (Object.keys(value).length <= 2 && asObject(value.error) && typeof asObject(value.error)?.message === 'string') {
    return 'gemini';
  }
  return undefined;
}

const CLI_NAMES: ReadonlySet<string> = new Set<JsonFormat>(['claude', 'codex', 'gemini']);

/** The CLI an agent command runs, by argv[0]'s basename (`/usr/local/bin/claude`, `gemini.cmd`). */
export function cliOfCommand(command: readonly string[] | undefined): JsonFormat | undefined {
  const name = (command?.[0] ?? '')
    .split(/[\\/]/)
    .at(-1)
    ?.replace(/\.(?:exe|cmd)$/i, '');
  return name !== undefined && CLI_NAMES.has(name) ? (name as JsonFormat) : undefined;
}
