// OpenAI Codex `codex exec --json`: thread.* / turn.* / item.* events. Only the terminal turn.failed is
// decisive; top-level `error` events before it are usually retry chatter ("retrying 2/5…").
import type { Tokens } from '../../api/agent-task.ts';
import { FINAL_TEXT_MAX_CHARS, type FormatFacts, type FormatReader } from './format-reader.ts';
import { addTokens, asObject, asString, count, keepTail, zeroTokens, type JsonObject } from './json-fields.ts';

// Codex's input_tokens INCLUDES cached_input_tokens and cache_write_input_tokens (the Responses API's
// input_tokens_details break input_tokens down). We report input without both shares, cacheRead and
// cacheWrite beside it, so nothing is counted twice and each share is priced at its own rate; the three add
// up to what codex calls input. output_tokens already includes reasoning_output_tokens.
function codexTokens(usage: JsonObject): Tokens {
  const cached = count(usage.cached_input_tokens);
  const written = count(usage.cache_write_input_tokens);
  return {
    input: Math.max(0, count(usage.input_tokens) - cached - written),
    output: count(usage.output_tokens),
    cacheRead: cached,
    cacheWrite: written,
  };
}

export function createCodexReader(): FormatReader {
  const tokens = zeroTokens();
  let lastTurn: 'completed' | 'failed' | undefined;
  let failure: string | undefined;
  let chatter: string | undefined;
  let lastAgentMessage: string | undefined;

  const addUsage = (value: JsonObject): void => {
    const usage = asObject(value.usage);
    if (usage) addTokens(tokens, codexTokens(usage));
  };

  return {
    format: 'codex',
    event(value: JsonObject): boolean {
      const type = asString(value.type);
      if (type === undefined) return false;
      if (type === 'turn.completed') {
        addUsage(value);
        lastTurn = 'completed';
        chatter = undefined;
      } else if (type === 'turn.failed') {
        addUsage(value);
        lastTurn = 'failed';
        failure = asString(asObject(value.error)?.message) ?? asString(value.error) ?? 'codex turn failed';
      } else if (type === 'error') {
        chatter = asString(value.message) ?? chatter;
      } else if (type === 'item.completed') {
        const item = asObject(value.item);
        if (item?.type === 'agent_message' && typeof item.text === 'string') {
          // The last agent message is the final answer; earlier ones are progress notes.
          lastAgentMessage = keepTail(item.text, FINAL_TEXT_MAX_CHARS);
        }
      } else if (!/^(thread|turn|item)\./.test(type)) {
        return false;
      }
      return true;
    },
    facts(): FormatFacts {
      const agentError = lastTurn === 'failed';
      return {
        agentError,
        errorMessage: agentError ? failure : undefined,
        hints: { texts: chatter && !agentError ? [chatter] : [], statuses: [] },
        finalText: lastAgentMessage,
        tokens: { ...tokens },
        costUSD: undefined,
        final: lastTurn !== undefined,
      };
    },
  };
}
