// The Gemini API as Gemini CLI calls it: POST /v1beta/models/<model>:streamGenerateContent?alt=sse and
// :generateContent (JSON). Errors are google.rpc.Status documents.
import { json, type Reply } from './reply.ts';
import { DONE_TEXT, MORE_TEXT, TOOL_LOOP_USAGE, USAGE, type Scenario } from './scenarios.ts';

function status(code: number, statusName: string, message: string, details: unknown[] = []): Reply {
  return json(code, { error: { code, message, status: statusName, details } });
}

const errorInfo = (reason: string) => ({
  '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
  reason,
  domain: 'googleapis.com',
  metadata: { service: 'generativelanguage.googleapis.com' },
});

function perDayQuota(model: string): Reply {
  return status(
    429,
    'RESOURCE_EXHAUSTED',
    `You exceeded your current quota, please check your plan and billing details. Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 100, model: ${model}`,
    [
      {
        '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
        violations: [
          {
            quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests',
            quotaId: 'GenerateRequestsPerDayPerProjectPerModel-FreeTier',
            quotaDimensions: { location: 'global', model },
            quotaValue: '100',
          },
        ],
      },
      {
        '@type': 'type.googleapis.com/google.rpc.Help',
        links: [
          {
            description: 'Learn more about Gemini API quotas',
            url: 'https://ai.google.dev/gemini-api/docs/rate-limits',
          },
        ],
      },
    ],
  );
}

export function geminiReply(scenario: Scenario, model: string, stream: boolean, requestId = ''): Reply {
  switch (scenario) {
    case 'overloaded':
      return status(503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.');
    case 'ratelimit':
      return status(429, 'RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).', [
        { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' },
      ]);
    case 'server500':
      return status(
        500,
        'INTERNAL',
        'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
      );
    case 'auth401':
      // What Google sends for a bad key: 400, not 401.
      return status(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [
        errorInfo('API_KEY_INVALID'),
      ]);
    case 'forbidden403':
      return status(
        403,
        'PERMISSION_DENIED',
        'Permission denied: Consumer does not have access to the Generative Language API.',
        [errorInfo('SERVICE_DISABLED')],
      );
    case 'bad400':
      return status(
        400,
        'INVALID_ARGUMENT',
        'Invalid JSON payload received. Unknown name "contentz": Cannot find field.',
      );
    case 'toolong400':
      return status(
        400,
        'INVALID_ARGUMENT',
        'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).',
      );
    case 'usage':
    case 'usage7d':
    case 'usagenoreset':
    case 'apilimit':
      return perDayQuota(model);
    case 'usage3d':
      // A retry delay past what gemini waits for itself: it gives up with a TerminalQuotaError.
      return status(429, 'RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).', [
        { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${3 * 86_400}s` },
      ]);
    case 'billing':
      return status(
        403,
        'PERMISSION_DENIED',
        'This API method requires billing to be enabled. Please enable billing on project #1 then retry.',
        [errorInfo('BILLING_DISABLED')],
      );
    default:
      break;
  }
  if (scenario === 'toolloop') return toolCall(model, stream, requestId);
  const text = scenario === 'more' ? MORE_TEXT : DONE_TEXT;
  const u = USAGE.gemini;
  const usageMetadata = {
    promptTokenCount: u.prompt,
    candidatesTokenCount: u.candidates,
    totalTokenCount: u.prompt + u.candidates + u.thoughts,
    cachedContentTokenCount: u.cached,
    thoughtsTokenCount: u.thoughts,
  };
  const chunk = (part: string, last: boolean) => ({
    candidates: [
      { content: { parts: [{ text: part }], role: 'model' }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) },
    ],
    ...(last ? { usageMetadata } : {}),
    modelVersion: model,
  });
  if (!stream) return json(200, chunk(text, true));
  if (scenario === 'hang') return { kind: 'sse', events: [], hang: true };
  const half = Math.floor(text.length / 2);
  if (scenario === 'drop') return { kind: 'sse', events: [{ data: chunk(text.slice(0, half), false) }], drop: true };
  return {
    kind: 'sse',
    events: [{ data: chunk(text.slice(0, half), false) }, { data: chunk(text.slice(half), true) }],
  };
}

/**
 * toolloop: a call of the read-only glob tool, every time: gemini never ends by itself. The pattern differs
 * per request: gemini's loop detection stops a run after a few identical calls.
 */
function toolCall(model: string, stream: boolean, requestId: string): Reply {
  const u = TOOL_LOOP_USAGE;
  const body = {
    candidates: [
      {
        content: {
          parts: [{ functionCall: { name: 'glob', args: { pattern: `${requestId || 'step'}/*.md` } } }],
          role: 'model',
        },
        index: 0,
        finishReason: 'STOP',
      },
    ],
    usageMetadata: { promptTokenCount: u.input, candidatesTokenCount: u.output, totalTokenCount: u.input + u.output },
    modelVersion: model,
  };
  return stream ? { kind: 'sse', events: [{ data: body }] } : json(200, body);
}
