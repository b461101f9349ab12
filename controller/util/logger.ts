// pino JSON logs. Secrets never reach a log line: redaction covers the places they could appear.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { pino } from 'pino';
import type { Logger } from 'pino';

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

export function createLogger(opts: { level?: string; file?: string; name?: string } = {}): Logger {
  if (opts.file) mkdirSync(dirname(opts.file), { recursive: true });
  const destination = pino.destination({ dest: opts.file ?? 2, sync: false });
  return pino(
    {
      name: opts.name ?? 'episodic',
      base: { pid: process.pid },
      level: opts.level ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}
