// The one wording of "this command could not start", in plain words with what to do about it: the episode's
// message, its record, the task's status and the log all carry it (for the agent, verify and gate commands).
// Pure: the errno and what the caller knows in, the sentence out.

export interface CannotStartFacts {
  /** argv[0] as the spec gives it (undefined: an empty command). */
  file: string | undefined;
  /** Node's errno code (ENOENT, EACCES…), or ESPAWN when there was none. */
  code: string;
  /** Node's own message, kept for a code this rule has no words for. */
  detail: string;
  /** The spec field the command comes from, e.g. spec.agent.command. */
  field: string;
  /** The directory it was started in, and whether it exists (a missing cwd is reported by Node as ENOENT too). */
  cwd?: string;
  cwdExists?: boolean;
}

/** "cannot start claude: not found on PATH — install it, or give spec.agent.command its full path". */
export function cannotStartMessage(f: CannotStartFacts): string {
  if (f.file === undefined || f.file === '') return `cannot start: ${f.field} is empty — give it the command to run`;
  return `cannot start ${f.file}: ${why(f, f.file)}`;
}

function why(f: CannotStartFacts, file: string): string {
  const pathed = file.includes('/');
  switch (f.code) {
    case 'ENOENT':
      if (f.cwdExists === false) return `its directory ${f.cwd} does not exist — check the task's workspace`;
      return pathed
        ? `no such file — check the path in ${f.field} (a relative path starts from the workspace)`
        : `not found on PATH — install it, or give ${f.field} its full path`;
    case 'EACCES':
    case 'EPERM':
      return pathed
        ? `permission denied — make it executable (chmod +x ${file}), or start it through its interpreter in ${f.field}`
        : `permission denied — the file found on PATH is not executable by this user; give ${f.field} the full path of the right one`;
    case 'ENOEXEC':
      return `not a program this system can run (a script without a #! line?) — start it through its interpreter in ${f.field}, e.g. [node, ${file}]`;
    case 'ENOTDIR':
      return `a part of its path is not a directory — check ${f.field}`;
    case 'EISDIR':
      return `it is a directory — ${f.field} must name a program`;
    case 'E2BIG':
      return 'its arguments and environment are too long for the system — pass the prompt by file or stdin (spec.agent.promptVia)';
    case 'EAGAIN':
    case 'ENOMEM':
      return `the system is out of processes or memory for now (${f.code}) — it is retried; if it persists, lower --max-concurrent`;
    case 'EMFILE':
    case 'ENFILE':
      return `too many files are open (${f.code}) — lower --max-concurrent, or raise the open-file limit (ulimit -n)`;
    default:
      return f.detail;
  }
}
