// How a printed command line names episodic and its arguments, so it can be pasted back as it is (init's
// next step, run's next steps).
import { basename, delimiter, dirname, relative, resolve } from 'node:path';

/** How this episodic was started: `episodic` only when on PATH, else the path it was run by. */
export function invocation(): string {
  const script = process.argv[1] ?? 'episodic';
  const onPath = (process.env.PATH ?? '').split(delimiter).some((d) => d && resolve(d) === dirname(script));
  if (onPath) return basename(script);
  const rel = relative(process.cwd(), script);
  return shellWord(rel.startsWith('..') ? script : rel.includes('/') ? rel : `./${rel}`);
}

/** A word the shell passes as it is, else single-quoted. */
export function shellWord(word: string): string {
  return /^[\w./@%+=:,-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
