// The Anthropic Messages API as Claude Code calls it: POST /v1/messages, streaming (SSE) or JSON.
import { json, type Reply } from './reply.ts';
import { DONE_TEXT, MORE_TEXT, TOOL_LOOP_USAGE, USAGE, resetInSeconds, type Scenario } from './scenarios.ts';

function error(
  status: number,
  type: string,
  message: string,
  requestId: string,
  headers: Record<string, string> = {},
): Reply {
  return json(
    status,
    { type: 'error', error: { type, message }, request_id: requestId },
    { 'request-id': requestId, ...headers },
  );
}

/** Subscriber limits: 429 with the unified rate-limit headers Claude Code reads to word "You've hit your … limit". */
function usageLimit(scenario: Scenario, requestId: string, nowSeconds: number): Reply {
  const reset = resetInSeconds(scenario);
  const claim = scenario === 'usage' || scenario === 'usagenoreset' ? 'five_hour' : 'seven_day';
  const window = claim === 'five_hour' ? '5h' : '7d';
  const headers: Record<string, string> = {
    'anthropic-ratelimit-unified-status': 'rejected',
    'anthropic-ratelimit-unified-representative-claim': claim,
    [`anthropic-ratelimit-unified-${window}-status`]: 'rejected',
    [`anthropic-ratelimit-unified-${window}-utilization`]: '1',
  };
  if (reset !== undefined) {
    const at = String(nowSeconds + reset);
    headers['anthropic-ratelimit-unified-reset'] = at;
    headers[`anthropic-ratelimit-unified-${window}-reset`] = at;
  }
  return error(
    429,
    'rate_limit_error',
    "This request would exceed your account's rate limit. Please try again later.",
    requestId,
    headers,
  );
}

export function anthropicReply(
  scenario: Scenario,
  body: Record<string, unknown>,
  requestId: string,
  nowSeconds: number,
): Reply {
  const model = typeof body.model === 'string' ? body.model : 'claude-sonnet-4-5';
  switch (scenario) {
    case 'overloaded':
      return error(529, 'overloaded_error', 'Overloaded', requestId);
    case 'ratelimit':
      return error(
        429,
        'rate_limit_error',
        'Number of request tokens has exceeded your per-minute rate limit',
        requestId,
        { 'retry-after': '1' },
      );
    case 'server500':
      return error(500, 'api_error', 'Internal server error', requestId);
    case 'auth401':
      return error(401, 'authentication_error', 'invalid x-api-key', requestId);
    case 'forbidden403':
      return error(
        403,
        'permission_error',
        'Your API key does not have permission to use the specified resource.',
        requestId,
      );
    case 'bad400':
      return error(400, 'invalid_request_error', 'messages.0.content.0.type: Field required', requestId);
    case 'toolong400':
      return error(400, 'invalid_request_error', 'prompt is too long: 215000 tokens > 200000 maximum', requestId);
    case 'apilimit': {
      // An API key's spend limit (Console → Limits): a 400 that names the day access returns.
      const day = new Date((nowSeconds + 3 * 86_400) * 1000).toISOString().slice(0, 10);
      return error(
        400,
        'invalid_request_error',
        `You have reached your specified API usage limits. You will regain access on ${day} at 00:00 UTC.`,
        requestId,
      );
    }
    case 'billing':
      return error(
        400,
        'invalid_request_error',
        'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.',
        requestId,
      );
    case 'usage':
    case 'usage7d':
    case 'usage3d':
    case 'usagenoreset':
      return usageLimit(scenario, requestId, nowSeconds);
    case 'toolloop':
      return toolCall(model, body.stream === true, requestId);
    default:
      break;
  }
  const text = scenario === 'more' ? MORE_TEXT : DONE_TEXT;
  const u = USAGE.anthropic;
  const id = `msg_${requestId}`;
  const startUsage = {
    input_tokens: u.input,
    cache_creation_input_tokens: u.cacheWrite,
    cache_read_input_tokens: u.cacheRead,
    output_tokens: 1,
  };
  const message = {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: startUsage,
  };
  if (body.stream !== true) {
    const usage = { ...startUsage, output_tokens: u.output };
    return json(
      200,
      { ...message, content: [{ type: 'text', text }], stop_reason: 'end_turn', usage },
      { 'request-id': requestId },
    );
  }
  const start = { event: 'message_start', data: { type: 'message_start', message } };
  if (scenario === 'hang' || scenario === 'drop') {
    return {
      kind: 'sse',
      headers: { 'request-id': requestId },
      events: [start],
      hang: scenario === 'hang',
      drop: scenario === 'drop',
    };
  }
  const half = Math.floor(text.length / 2);
  return {
    kind: 'sse',
    headers: { 'request-id': requestId },
    events: [
      start,
      {
        event: 'content_block_start',
        data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      },
      {
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: text.slice(0, half) } },
      },
      {
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: text.slice(half) } },
      },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { output_tokens: u.output },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ],
  };
}

/** toolloop: a call of a read-only tool (Glob needs no permission), every time: the CLI never ends by itself. */
function toolCall(model: string, stream: boolean, requestId: string): Reply {
  const u = TOOL_LOOP_USAGE;
  const id = `msg_${requestId}`;
  const tool = { type: 'tool_use', id: `toolu_${requestId}`, name: 'Glob', input: { pattern: '*.md' } };
  const usage = { input_tokens: u.input, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 };
  const message = {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage,
  };
  if (!stream)
    return json(
      200,
      { ...message, content: [tool], stop_reason: 'tool_use', usage: { ...usage, output_tokens: u.output } },
      { 'request-id': requestId },
    );
  return {
    kind: 'sse',
    headers: { 'request-id': requestId },
    events: [
      { event: 'message_start', data: { type: 'message_start', message } },
      {
        event: 'content_block_start',
        data: { type: 'content_block_start', index: 0, content_block: { ...tool, input: {} } },
      },
      {
        event: 'content_block_delta',
        data: {
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'input_json_delta', partial_json: JSON.stringify(tool.input) },
        },
      },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: { stop_reason: 'tool_use', stop_sequence: null },
          usage: { output_tokens: u.output },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ],
  };
}
