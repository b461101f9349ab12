// `episodic run --log-format text` (the default off a terminal): each pino JSON line as one line a person
// reads — time, task (or trigger), what happened — instead of the JSON a machine reads (`--log-format json`).
import { printable } from './printable.ts';

export const LOG_FORMATS = ['text', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Fields whose value is worth a person's reading when a line has them, in this order. */
const SHOWN = [
  'url',
  'tasks',
  'reason',
  'tick',
  'item',
  'delivery',
  'status',
  'signal',
  'failures',
  'undecided',
  'budget',
];
/** pino's levels that are not a plain "info". */
const LEVEL_WORD: Record<string, string> = { warn: 'warning: ', error: 'error: ', fatal: 'fatal: ' };

/** One pino record as a line: "00:36:13  build-parser  episode 1 changed the workspace — $0.0123". */
export function formatLogLine(record: Record<string, unknown>): string {
  const time = typeof record.time === 'string' ? record.time.slice(11, 19) : '--:--:--';
  const who = subject(record);
  const level = LEVEL_WORD[String(record.level)] ?? '';
  const details = [
    ...(typeof record.costUSD === 'number' && record.costUSD > 0 ? [`$${record.costUSD.toFixed(4)}`] : []),
    ...SHOWN.filter((k) => isShown(record[k])).map((k) => `${k} ${String(record[k])}`),
    ...(record.err !== undefined ? [errorText(record.err)] : []),
  ];
  const tail = details.length > 0 ? ` — ${details.join(', ')}` : '';
  const text = `${level}${String(record.msg ?? '')}${tail}`;
  return printable([time, ...(who ? [who] : []), text].join('  '), 2000);
}

/** The task the line is about ("ns/name" outside default), else its trigger. */
function subject(record: Record<string, unknown>): string {
  const ns = typeof record.namespace === 'string' && record.namespace !== 'default' ? `${record.namespace}/` : '';
  if (typeof record.task === 'string') return `${ns}${record.task}`;
  if (typeof record.trigger === 'string') return `trigger ${record.trigger}`;
  return '';
}

function isShown(value: unknown): boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function errorText(err: unknown): string {
  if (typeof err === 'object' && err !== null && typeof (err as { message?: unknown }).message === 'string')
    return (err as { message: string }).message;
  return String(err);
}

/** The text for a chunk of pino's output: JSON lines in, formatted lines out (a line that is not JSON as it is). */
export function formatLogChunk(chunk: string): string {
  let out = '';
  for (const line of chunk.split('\n')) {
    if (line === '') continue;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      out += `${line}\n`;
      continue;
    }
    out += `${typeof record === 'object' && record !== null ? formatLogLine(record as Record<string, unknown>) : line}\n`;
  }
  return out;
}
