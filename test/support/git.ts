// git in tests: the real binary, argv only. Commits the helper makes are by a fixed identity, so a test needs no
// global git config; a test that wants another author passes its own -c after (the last -c wins).
import { execFileSync } from 'node:child_process';

/** `git ARGS…` in `cwd` as seed <seed@example.com>: its stdout, trimmed (on failure the error carries stderr). */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=seed', '-c', 'user.email=seed@example.com', ...args], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim();
}
