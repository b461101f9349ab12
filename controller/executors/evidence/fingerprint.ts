// "The same error again": an error message with what changes between runs stripped (numbers, paths, ids,
// times, quoted values), so two episodes failing the same way compare equal.
import { oneLine } from '../../api/bounds.ts';

const MAX = 200;

export function errorFingerprint(message: string | undefined): string | undefined {
  if (!message) return undefined;
  const stripped = message
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<id>')
    .replace(/\b\d{4}-\d{2}-\d{2}[T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?/g, '<time>')
    .replace(/(?:[A-Za-z]:)?(?:[\w.@~-]*\/)+[\w.@~-]+/g, '<path>')
    .replace(/\b[0-9a-f]{7,}\b/gi, '<hex>')
    .replace(/\d+(\.\d+)?/g, '<n>')
    .replace(/(["'`]).{0,200}?\1/g, '<str>');
  const text = oneLine(stripped);
  return text === '' ? undefined : text.slice(0, MAX);
}
