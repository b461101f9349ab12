import { isAbsolute, relative } from 'node:path';

/** Whether path is root or below it (both absolute and normalised). */
export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}
