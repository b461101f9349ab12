// Gemini CLI `--output-format json` ({response, stats, error}) and `stream-json` (init, message, tool_use,
// tool_result, error, result). Token accounting: gemini's prompt/input_tokens INCLUDE cached tokens
// (gemini-cli itself derives `input = prompt - cached`), so as for codex we report input without the cached
// share and cacheRead = cached. Thoughts are billed as output, so the JSON form counts them there. The
// stream's stats have no thoughts field and output_tokens carries only candidates, but total_tokens is the
// API's totalTokenCount (prompt + candidates + thoughts + tool-use prompt): the rest of the total is counted
// as output, which prices any tool-use prompt share at the output rate (an overestimate, safe for caps).
import type { Tokens } from '../../api/agent-task.ts';
import { FINAL_TEXT_MAX_CHARS, type FormatFacts, type FormatReader } from './format-reader.ts';
import {
  addTokens,
  appendTail,
  asNumber,
  asObject,
  asString,
  count,
  httpStatus,
  keepTail,
  zeroTokens,
  type JsonObject,
} from './json-fields.ts';

function modelTokens(t: JsonObject): Tokens {
  const cached = count(t.cached);
  // Prefer `prompt` (gross); `input` alone is already net of the cache in gemini-cli.
  const netInput = asNumber(t.prompt) !== undefined ? Math.max(0, count(t.prompt) - cached) : count(t.input);
  return {
    input: netInput + count(t.tool),
    output: count(t.candidates) + count(t.thoughts),
    cacheRead: cached,
    cacheWrite: 0,
  };
}

function documentTokens(stats: JsonObject | undefined): Tokens {
  const tokens = zeroTokens();
  const models = asObject(stats?.models);
  if (!models) return tokens;
  for (const model of Object.values(models)) {
    const t = asObject(asObject(model)?.tokens);
    if (t) addTokens(tokens, modelTokens(t));
  }
  return tokens;
}

function streamTokens(stats: JsonObject): Tokens {
  const cached = count(stats.cached);
  const net = asNumber(stats.input);
  const hidden = Math.max(0, count(stats.total_tokens) - count(stats.input_tokens) - count(stats.output_tokens));
  return {
    input: net !== undefined ? count(net) : Math.max(0, count(stats.input_tokens) - cached),
    output: count(stats.output_tokens) + hidden,
    cacheRead: cached,
    cacheWrite: 0,
  };
}

/** gemini's error.type, when it says more than "Error"/"unknown" (e.g. FatalAuthenticationError). */
function errorKinds(error: unknown): string[] {
  const type = asString(asObject(error)?.type);
  return type && !/^(error|unknown)$/i.test(type) && type.length <= 64 ? [type.toLowerCase()] : [];
}

function errorText(error: unknown): string | undefined {
  return asString(asObject(error)?.message) ?? asString(error);
}

export function createGeminiReader(): FormatReader {
  let document: JsonObject | undefined;
  let result: JsonObject | undefined;
  let segment: string | undefined;
  let startNewSegment = true;
  let severeError: string | undefined;

  const onMessage = (value: JsonObject): void => {
    const content = asString(value.content) ?? '';
    if (value.role === 'user') {
      startNewSegment = true;
      return;
    }
    if (value.role !== 'assistant') return;
    // The final answer is the assistant text after the last tool call.
    const base = startNewSegment || value.delta !== true || segment === undefined ? '' : segment;
    segment = appendTail(base, content, FINAL_TEXT_MAX_CHARS);
    startNewSegment = false;
  };

  return {
    format: 'gemini',
    event(value: JsonObject): boolean {
      if (value.type === undefined) {
        if (!('response' in value || 'stats' in value || asObject(value.error))) return false;
        document = value;
        return true;
      }
      switch (value.type) {
        case 'message':
          onMessage(value);
          return true;
        case 'tool_use':
        case 'tool_result':
          startNewSegment = true;
          return true;
        case 'error':
          if (value.severity !== 'warning') severeError = asString(value.message) ?? severeError;
          return true;
        case 'result':
          result = value;
          return true;
        case 'init':
          return true;
        default:
          return false;
      }
    },
    facts(): FormatFacts {
      const hints = { texts: [] as string[], statuses: [] as number[] };
      if (document) {
        const error = document.error;
        const agentError = asObject(error) !== undefined || typeof error === 'string';
        return {
          agentError,
          errorMessage: agentError ? (errorText(error) ?? 'gemini reported an error') : undefined,
          apiStatus: agentError ? httpStatus(asObject(error)?.code) : undefined,
          errorKinds: agentError ? errorKinds(error) : undefined,
          hints,
          finalText: asString(document.response),
          tokens: documentTokens(asObject(document.stats)),
          final: true,
        };
      }
      if (!result) {
        return {
          agentError: severeError !== undefined,
          errorMessage: severeError,
          hints,
          finalText: segment === undefined ? undefined : keepTail(segment, FINAL_TEXT_MAX_CHARS),
          tokens: zeroTokens(),
        };
      }
      const agentError = result.status !== 'success';
      const stats = asObject(result.stats);
      return {
        agentError,
        errorMessage: agentError
          ? (errorText(result.error) ?? severeError ?? `gemini status ${String(result.status)}`)
          : undefined,
        apiStatus: agentError ? httpStatus(asObject(result.error)?.code) : undefined,
        errorKinds: agentError ? errorKinds(result.error) : undefined,
        hints,
        finalText: segment === undefined ? undefined : keepTail(segment, FINAL_TEXT_MAX_CHARS),
        tokens: stats ? streamTokens(stats) : zeroTokens(),
        final: true,
      };
    },
  };
}
