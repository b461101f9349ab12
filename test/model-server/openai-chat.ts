// OpenAI Chat Completions as an OpenAI-compatible client calls it: POST /v1/chat/completions, a JSON
// `chat.completion` body, or with stream: true `chat.completion.chunk` events ending in `data: [DONE]`; the
// usage comes on a last chunk with no choices only when stream_options.include_usage is set (as OpenAI does).
import { openaiReply } from './openai.ts';
import type { Reply, SseEvent } from './reply.ts';
import { DONE_TEXT, MORE_TEXT, TOOL_LOOP_USAGE, USAGE, type Scenario } from './scenarios.ts';

/** Scenarios whose answer is the same in both OpenAI APIs: an error body (openai.ts builds them). */
const ERRORS: ReadonlySet<Scenario> = new Set([
  'overloaded',
  'ratelimit',
  'server500',
  'auth401',
  'forbidden403',
  'bad400',
  'toolong400',
  'billing',
  'usage',
  'usage7d',
  'usage3d',
  'usagenoreset',
  'apilimit',
]);

type Json = Record<string, unknown>;

function usageOf(scenario: Scenario): Json {
  if (scenario === 'toolloop') {
    const t = TOOL_LOOP_USAGE;
    return { prompt_tokens: t.input, completion_tokens: t.output, total_tokens: t.input + t.output };
  }
  const u = USAGE.openai;
  return {
    prompt_tokens: u.input,
    completion_tokens: u.output,
    total_tokens: u.input + u.output,
    prompt_tokens_details: { cached_tokens: u.cached, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: u.reasoning, audio_tokens: 0 },
  };
}

/** The assistant's message: a text, or (toolloop) a call of a harmless tool every time. */
function messageOf(scenario: Scenario, requestId: string): { message: Json; finish: string } {
  if (scenario !== 'toolloop')
    return {
      message: { role: 'assistant', content: scenario === 'more' ? MORE_TEXT : DONE_TEXT, refusal: null },
      finish: 'stop',
    };
  const call = {
    id: `call_${requestId}`,
    type: 'function',
    function: { name: 'exec_command', arguments: JSON.stringify({ cmd: 'echo step' }) },
  };
  return { message: { role: 'assistant', content: null, tool_calls: [call] }, finish: 'tool_calls' };
}

export function openaiChatReply(scenario: Scenario, body: Json, requestId: string, nowSeconds: number): Reply {
  if (ERRORS.has(scenario)) return openaiReply(scenario, body, requestId, nowSeconds);
  const model = typeof body.model === 'string' ? body.model : 'gpt-5';
  const head = { id: `chatcmpl-${requestId}`, created: nowSeconds, model, system_fingerprint: null };
  const headers = { 'x-request-id': requestId };
  const { message, finish } = messageOf(scenario, requestId);
  if (body.stream !== true)
    return {
      kind: 'json',
      status: 200,
      headers,
      body: {
        ...head,
        object: 'chat.completion',
        choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
        usage: usageOf(scenario),
      },
    };
  const options = body.stream_options as Json | undefined;
  const withUsage = options?.include_usage === true;
  const chunk = (delta: Json, finishReason: string | null): SseEvent => ({
    data: {
      ...head,
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...(withUsage ? { usage: null } : {}),
    },
  });
  const events = [chunk({ role: 'assistant', content: '' }, null)];
  if (scenario === 'hang' || scenario === 'drop')
    return { kind: 'sse', headers, events, hang: scenario === 'hang', drop: scenario === 'drop' };
  // A streamed tool call names its place in the list (index), as OpenAI's deltas do.
  const calls = message.tool_calls as Json[] | undefined;
  const delta = calls ? { tool_calls: calls.map((c, index) => ({ index, ...c })) } : { content: message.content };
  events.push(chunk(delta, null), chunk({}, finish));
  if (withUsage)
    events.push({ data: { ...head, object: 'chat.completion.chunk', choices: [], usage: usageOf(scenario) } });
  events.push({ data: '[DONE]' });
  return { kind: 'sse', headers, events };
}
