// Which host directories a command needs read-only inside the sandbox: the install of its program (and of the
// script an interpreter runs). Pure: the caller resolves PATH and symlinks; /usr is in every sandbox already.
import { basename, dirname, isAbsolute } from 'node:path';

const INTERPRETERS = new Set(['node', 'nodejs', 'python', 'python3', 'bash', 'sh', 'deno', 'bun', 'perl', 'ruby']);
const SYSTEM = ['/usr/', '/bin/', '/sbin/', '/lib/', '/lib64/', '/etc/'];

/** The argv entries that name programs: the command, and an interpreter's script (never the prompt). */
export function programsOf(argv: readonly string[]): string[] {
  const [file, script] = argv;
  if (file === undefined) return [];
  return INTERPRETERS.has(basename(file)) && script !== undefined && isAbsolute(script) ? [file, script] : [file];
}

/** The directory to mount for a program at `path` (resolved): its whole node_modules, else its own directory. */
export function installDirOf(path: string): string | undefined {
  if (SYSTEM.some((dir) => path.startsWith(dir))) return undefined;
  const at = path.indexOf('/node_modules/');
  return at >= 0 ? path.slice(0, at + '/node_modules'.length) : dirname(path);
}

/** Mount points covering each program, both as named and as resolved, without ones inside others. */
export function installDirs(paths: ReadonlyArray<{ named: string; resolved: string }>): string[] {
  const dirs = new Set<string>();
  for (const p of paths)
    for (const path of [p.named, p.resolved]) {
      const dir = isAbsolute(path) ? installDirOf(path) : undefined;
      if (dir) dirs.add(dir);
    }
  const sorted = [...dirs].sort((a, b) => a.length - b.length);
  return sorted.filter((dir, i) => !sorted.slice(0, i).some((outer) => dir.startsWith(`${outer}/`)));
}
