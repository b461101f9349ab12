// What a stand-in API handler answers: a JSON body, or a server-sent event stream that may stop short and
// hang (the connection stays open until the client gives up or the server closes) or be cut (drop).
import type { ServerResponse } from 'node:http';

export type Reply =
  | { kind: 'json'; status: number; headers?: Record<string, string>; body: unknown }
  | { kind: 'sse'; headers?: Record<string, string>; events: SseEvent[]; hang?: boolean; drop?: boolean };

export interface SseEvent {
  /** The `event:` line; Gemini's and Chat Completions' streams have none. */
  event?: string;
  /** Sent as JSON; a string is sent as it is (Chat Completions' `[DONE]`). */
  data: unknown;
}

export function json(status: number, body: unknown, headers?: Record<string, string>): Reply {
  return { kind: 'json', status, body, headers };
}

export function send(res: ServerResponse, reply: Reply): void {
  if (reply.kind === 'json') {
    const body = JSON.stringify(reply.body);
    res.writeHead(reply.status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      ...reply.headers,
    });
    res.end(body);
    return;
  }
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...reply.headers,
  });
  res.flushHeaders(); // a stream that hangs before its first event still sends its headers
  for (const e of reply.events) {
    const data = typeof e.data === 'string' ? e.data : JSON.stringify(e.data);
    res.write(`${e.event ? `event: ${e.event}\n` : ''}data: ${data}\n\n`);
  }
  // drop: the connection is cut mid-stream, as a proxy or a crashing server would.
  if (reply.drop) setImmediate(() => res.socket?.destroy());
  else if (!reply.hang) res.end();
}
