import { isAbsolute, relative, sep } from 'node:path';

/** Whether path is root or below it (both absolute and normalised). */
export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  // "..data" (how Kubernetes names a ConfigMap's data directory) is inside; only ".." as a whole step leads out.
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}
