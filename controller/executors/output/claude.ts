// Claude Code `-p --output-format json|stream-json`: the final {"type":"result"} object is the verdict.
// Branch on is_error / api_error_status, never on subtype: an API failure can carry subtype "success".
// Error kinds come from the result (api_error_type, api_error such as usage_limit_reached, terminal_reason
// such as prompt_too_long), the synthetic API-error assistant message (error, api_error_params) and a
// rejected rate_limit_event, which also carries the reset instant (stream-json only).
import type { Tokens } from '../../api/agent-task.ts';
import { FINAL_TEXT_MAX_CHARS, type FormatFacts, type FormatReader } from './format-reader.ts';
import {
  addTokens,
  appendTail,
  asCost,
  asNumber,
  asObject,
  asString,
  count,
  httpStatus,
  keepTail,
  zeroTokens,
  type JsonObject,
} from './json-fields.ts';

function claudeTokens(usage: JsonObject): Tokens {
  // Anthropic's input_tokens already excludes cache reads and writes, so no subtraction here.
  return {
    input: count(usage.input_tokens),
    output: count(usage.output_tokens),
    cacheRead: count(usage.cache_read_input_tokens),
    cacheWrite: count(usage.cache_creation_input_tokens),
  };
}

function textOf(message: JsonObject): string {
  const content = message.content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const block of content) {
    const b = asObject(block);
    if (b?.type === 'text' && typeof b.text === 'string') text += b.text;
  }
  return text;
}

export function createClaudeReader(): FormatReader {
  let result: JsonObject | undefined;
  // Fallback when the stream is cut before the result: usage summed per assistant message id. Claude emits
  // one event per content block, each repeating its message's usage, so only the latest per id counts.
  const assistantTokens = zeroTokens();
  let currentId: string | undefined;
  let currentUsage: Tokens | undefined;
  let lastAssistantText: string | undefined;
  let lastTextId: string | undefined;
  let retryStatus: number | undefined;
  let retryText: string | undefined;
  const kinds = new Set<string>();
  let resetAtMs: number | undefined;
  let apiErrorStatus: number | undefined;
  let apiErrorText: string | undefined;

  const addKind = (value: unknown): void => {
    if (typeof value === 'string' && value !== '' && value.length <= 64 && kinds.size < 16)
      kinds.add(value.toLowerCase());
  };
  const onResetsAt = (info: JsonObject | undefined): void => {
    const at = asNumber(info?.resetsAt);
    // Seconds since the epoch; anything outside a sane window is not a reset time.
    if (at !== undefined && at > 1e9 && at < 1e11) resetAtMs = at * 1000;
  };
  // The synthetic assistant message Claude Code writes for a failed API call.
  const onApiErrorMessage = (value: JsonObject, message: JsonObject): void => {
    addKind(value.error);
    addKind(value.api_error_type);
    addKind(value.api_error);
    apiErrorStatus = httpStatus(value.api_error_status) ?? apiErrorStatus;
    apiErrorText = textOf(message) || apiErrorText;
    onResetsAt(asObject(asObject(value.api_error_params)?.rate_limit_info));
  };

  const onAssistant = (message: JsonObject): void => {
    const id = asString(message.id);
    const usage = asObject(message.usage);
    if (id === undefined || id !== currentId) {
      if (currentUsage) addTokens(assistantTokens, currentUsage);
      currentUsage = undefined;
      currentId = id;
    }
    if (usage) currentUsage = claudeTokens(usage);
    const text = textOf(message);
    if (text === '') return;
    const sameMessage = id !== undefined && id === lastTextId && lastAssistantText !== undefined;
    lastAssistantText = appendTail(sameMessage ? (lastAssistantText ?? '') : '', text, FINAL_TEXT_MAX_CHARS);
    lastTextId = id;
  };

  return {
    format: 'claude',
    event(value: JsonObject): boolean {
      switch (value.type) {
        case 'result':
          result = value;
          return true;
        case 'assistant': {
          const message = asObject(value.message);
          if (message && value.is_api_error_message === true) onApiErrorMessage(value, message);
          else if (message) onAssistant(message);
          return true;
        }
        case 'rate_limit_event': {
          const info = asObject(value.rate_limit_info);
          if (info?.status === 'rejected') {
            kinds.add('rate_limit_rejected');
            addKind(info.rateLimitType);
            onResetsAt(info);
          }
          return true;
        }
        case 'system':
          if (value.subtype === 'api_retry') {
            retryStatus = httpStatus(value.error_status) ?? retryStatus;
            retryText = asString(value.error) ?? retryText;
          }
          return true;
        case 'user':
        case 'stream_event':
          return true;
        default:
          return false;
      }
    },
    facts(): FormatFacts {
      if (!result) {
        const tokens = zeroTokens();
        addTokens(tokens, assistantTokens);
        if (currentUsage) addTokens(tokens, currentUsage);
        const texts = [apiErrorText, retryText].filter((t): t is string => t !== undefined);
        const statuses = [apiErrorStatus, retryStatus].filter((t): t is number => t !== undefined);
        const finalText =
          lastAssistantText === undefined ? undefined : keepTail(lastAssistantText, FINAL_TEXT_MAX_CHARS);
        return { agentError: false, hints: { texts, statuses }, finalText, tokens, errorKinds: [...kinds], resetAtMs };
      }
      const apiStatus = httpStatus(result.api_error_status);
      const agentError = result.is_error === true || apiStatus !== undefined;
      const resultText = asString(result.result);
      const usage = asObject(result.usage);
      const facts: FormatFacts = {
        agentError,
        hints: { texts: [], statuses: [] },
        finalText: resultText,
        tokens: usage ? claudeTokens(usage) : zeroTokens(),
        costUSD: asCost(result.total_cost_usd) ?? asCost(result.cost_usd),
        final: true,
      };
      if (agentError) {
        const errors = Array.isArray(result.errors) ? result.errors.filter((e) => typeof e === 'string') : [];
        facts.errorMessage =
          (resultText?.trim() ? resultText : undefined) ??
          (errors.length > 0 ? errors.join('; ') : undefined) ??
          asString(result.subtype) ??
          'claude reported an error';
        facts.apiStatus = apiStatus ?? apiErrorStatus;
        addKind(result.api_error_type);
        addKind(result.api_error);
        if (result.terminal_reason !== 'api_error' && result.terminal_reason !== 'completed')
          addKind(result.terminal_reason);
        if (typeof result.subtype === 'string' && result.subtype.startsWith('error')) addKind(result.subtype);
        facts.errorKinds = [...kinds];
        facts.resetAtMs = resetAtMs;
      }
      return facts;
    },
  };
}
