// A short hash of a JSON value that ignores key order: the local generation of a spec document.
import { createHash } from 'node:crypto';

/** Stable across key order, so reformatting a file is not an edit. */
export function hashSpec(spec: unknown): string {
  return createHash('sha256').update(stableJson(spec)).digest('hex').slice(0, 16);
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
