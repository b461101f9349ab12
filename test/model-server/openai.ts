// The OpenAI Responses API as Codex calls it: POST /v1/responses with stream: true (SSE).
import { json, type Reply, type SseEvent } from './reply.ts';
import { DONE_TEXT, MORE_TEXT, TOOL_LOOP_USAGE, USAGE, resetInSeconds, type Scenario } from './scenarios.ts';

function error(
  status: number,
  type: string,
  message: string,
  requestId: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Reply {
  return json(
    status,
    { error: { message, type, param: null, code: extra.code ?? type, ...extra } },
    { 'x-request-id': requestId, ...headers },
  );
}

export function openaiReply(
  scenario: Scenario,
  body: Record<string, unknown>,
  requestId: string,
  nowSeconds: number,
): Reply {
  const model = typeof body.model === 'string' ? body.model : 'gpt-5';
  switch (scenario) {
    case 'overloaded':
      return error(503, 'server_is_overloaded', 'The server is overloaded. Please try again later.', requestId, {
        code: 'server_is_overloaded',
      });
    case 'ratelimit':
      return error(
        429,
        'rate_limit_exceeded',
        'Rate limit reached for gpt-5 on tokens per min (TPM). Please try again in 1s.',
        requestId,
        { code: 'rate_limit_exceeded' },
        { 'retry-after': '1' },
      );
    case 'server500':
      return error(
        500,
        'server_error',
        'The server had an error while processing your request. Sorry about that!',
        requestId,
      );
    case 'auth401':
      return error(
        401,
        'invalid_request_error',
        'Incorrect API key provided: dummy. You can find your API key at https://platform.openai.com/account/api-keys.',
        requestId,
        { code: 'invalid_api_key' },
      );
    case 'forbidden403':
      return error(403, 'invalid_request_error', 'You are not allowed to sample from this model', requestId, {
        code: 'model_not_allowed',
      });
    case 'bad400':
      return error(
        400,
        'invalid_request_error',
        "Invalid value: 'input_textt'. Supported values are: 'input_text', 'input_image'.",
        requestId,
        { code: 'invalid_value', param: 'input[0].content[0].type' },
      );
    case 'toolong400':
      return error(
        400,
        'invalid_request_error',
        'Your input exceeds the context window of this model. Please adjust your input and try again.',
        requestId,
        { code: 'context_length_exceeded', param: 'input' },
      );
    case 'billing':
      return error(
        429,
        'insufficient_quota',
        'You exceeded your current quota, please check your plan and billing details.',
        requestId,
        { code: 'insufficient_quota' },
      );
    case 'usage':
    case 'usage7d':
    case 'usage3d':
    case 'usagenoreset':
    case 'apilimit': {
      // apilimit: an Anthropic-only shape; here the limit without a reset.
      const reset = resetInSeconds(scenario);
      const extra: Record<string, unknown> = { plan_type: 'plus', code: null };
      if (reset !== undefined) Object.assign(extra, { resets_at: nowSeconds + reset, resets_in_seconds: reset });
      return error(429, 'usage_limit_reached', 'The usage limit has been reached', requestId, extra);
    }
    default:
      break;
  }
  const created = {
    id: `resp_${requestId}`,
    object: 'response',
    created_at: nowSeconds,
    status: 'in_progress',
    model,
    output: [],
  };
  const events: SseEvent[] = [
    { event: 'response.created', data: { type: 'response.created', sequence_number: 0, response: created } },
  ];
  if (scenario === 'hang' || scenario === 'drop') {
    return {
      kind: 'sse',
      headers: { 'x-request-id': requestId },
      events,
      hang: scenario === 'hang',
      drop: scenario === 'drop',
    };
  }
  if (scenario === 'toolloop') return toolCall(created, events, requestId);
  const text = scenario === 'more' ? MORE_TEXT : DONE_TEXT;
  const itemId = `msg_${requestId}`;
  const done = {
    id: itemId,
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text, annotations: [] }],
  };
  const u = USAGE.openai;
  const usage = {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cached, cache_write_tokens: u.cacheWrite },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.input + u.output,
  };
  let seq = 1;
  const event = (type: string, data: Record<string, unknown>): SseEvent => ({
    event: type,
    data: { type, sequence_number: seq++, ...data },
  });
  events.push(
    event('response.output_item.added', { output_index: 0, item: { ...done, status: 'in_progress', content: [] } }),
    event('response.output_text.delta', { item_id: itemId, output_index: 0, content_index: 0, delta: text }),
    event('response.output_item.done', { output_index: 0, item: done }),
    event('response.completed', { response: { ...created, status: 'completed', output: [done], usage } }),
  );
  return { kind: 'sse', headers: { 'x-request-id': requestId }, events };
}

/** toolloop: a call of codex's exec_command with a harmless command, every time: codex never ends by itself. */
function toolCall(created: Record<string, unknown>, events: SseEvent[], requestId: string): Reply {
  const item = {
    id: `fc_${requestId}`,
    type: 'function_call',
    status: 'completed',
    call_id: `call_${requestId}`,
    name: 'exec_command',
    arguments: JSON.stringify({ cmd: 'echo step' }),
  };
  const usage = {
    input_tokens: TOOL_LOOP_USAGE.input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: TOOL_LOOP_USAGE.output,
    total_tokens: TOOL_LOOP_USAGE.input + TOOL_LOOP_USAGE.output,
  };
  const tail: SseEvent[] = [
    { type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress' } },
    { type: 'response.output_item.done', output_index: 0, item },
    { type: 'response.completed', response: { ...created, status: 'completed', output: [item], usage } },
  ].map((data, i) => ({ event: data.type, data: { ...data, sequence_number: i + 1 } }));
  return { kind: 'sse', headers: { 'x-request-id': requestId }, events: [...events, ...tail] };
}
