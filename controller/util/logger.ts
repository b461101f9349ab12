// pino JSON logs. Secrets never reach a log line: redaction covers the places they could appear.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { pino } from 'pino';
import type { Logger } from 'pino';
import { REDACTED, redact } from '../api/redaction.ts';
import { formatLogChunk } from './log-lines.ts';
import type { LogFormat } from './log-lines.ts';

export const REDACT_PATHS = [
  'env',
  '*.env',
  'token',
  '*.token',
  'password',
  '*.password',
  'authorization',
  '*.authorization',
  'headers.authorization',
];

export function createLogger(opts: { level?: string; file?: string; name?: string; format?: LogFormat } = {}): Logger {
  if (opts.file) mkdirSync(dirname(opts.file), { recursive: true });
  const sink = pino.destination({ dest: opts.file ?? 2, sync: false });
  // text: the same records, each written as a line a person reads (util/log-lines.ts); redaction comes first.
  const destination =
    opts.format === 'text'
      ? { write: (chunk: string) => sink.write(formatLogChunk(chunk)), flush: (cb: () => void) => sink.flush(cb) }
      : sink;
  return pino(
    {
      name: opts.name ?? 'episodic',
      base: { pid: process.pid },
      level: opts.level ?? 'info',
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      // Messages and top-level text fields (an error's message) pass the one rule too: a token in a URL or a
      // credential-looking word quoted from a forge or git answer never reaches the log file.
      hooks: {
        logMethod(args, method) {
          method.apply(this, args.map((a) => (typeof a === 'string' ? redact(a) : a)) as Parameters<typeof method>);
        },
      },
      formatters: { level: (label) => ({ level: label }), log: redactFields },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

function redactFields(object: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(object)) out[key] = typeof value === 'string' ? redact(value) : value;
  return out;
}
