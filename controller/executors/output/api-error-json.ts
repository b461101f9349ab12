// API error bodies that CLIs print verbatim inside their messages: {"error":{"code":400,"message":…,
// "status":"INVALID_ARGUMENT","details":[{"reason":"API_KEY_INVALID"}]}} (Google) or {"error":{"message":…,
// "type":"invalid_request_error","code":"context_length_exceeded"}} (OpenAI). Bounded: agent output is
// untrusted, so only a short window after `{"error"` is ever parsed.
import { asNumber, asObject, asString } from './json-fields.ts';

export interface ApiErrorBody {
  code?: number;
  message?: string;
  /** Lowercased status/type/code/reason strings, e.g. invalid_argument, api_key_invalid. */
  kinds: string[];
}

const MAX_BODY_CHARS = 16 * 1024;

function kindsOf(error: Record<string, unknown>): string[] {
  const kinds: string[] = [];
  const add = (v: unknown) => {
    if (typeof v === 'string' && v !== '' && v.length <= 64) kinds.push(v.toLowerCase());
  };
  add(error.status);
  add(error.type);
  add(error.code);
  if (Array.isArray(error.details)) {
    for (const d of error.details.slice(0, 8)) add(asObject(d)?.reason);
  }
  return kinds;
}

/** The first API error body in a text, unwrapping one level of JSON-in-message as Gemini CLI prints it. */
export function findApiErrorBody(text: string): ApiErrorBody | undefined {
  const start = text.search(/\{\s*"error"\s*:/);
  if (start < 0) return undefined;
  const window = text.slice(start, start + MAX_BODY_CHARS);
  // The body ends at some "}"; try from the last one backwards (few tries: a body is one JSON value).
  let end = window.lastIndexOf('}');
  for (let tries = 0; end > 0 && tries < 8; tries++) {
    try {
      const error = asObject(asObject(JSON.parse(window.slice(0, end + 1)))?.error);
      if (!error) return undefined;
      const body: ApiErrorBody = {
        code: asNumber(error.code),
        message: asString(error.message),
        kinds: kindsOf(error),
      };
      const inner = body.message?.trimStart().startsWith('{') ? findApiErrorBody(body.message) : undefined;
      return inner
        ? { code: inner.code ?? body.code, message: inner.message, kinds: [...body.kinds, ...inner.kinds] }
        : body;
    } catch {
      end = window.lastIndexOf('}', end - 1);
    }
  }
  return undefined;
}
