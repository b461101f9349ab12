// The two controllers the bench compares: this tree (mailbox events) and the baseline, the tree at the
// commit before them (the 2 s mailbox poll), extracted with `git archive` next to this repo's node_modules.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from '../local/lib.ts';

/** The commit before the one that replaced MESSAGE_POLL_MS (2 s) with mailbox events. */
export function defaultBaselineRef(): string {
  const args = [
    'log',
    '-1',
    '--format=%H',
    '-S',
    'MESSAGE_POLL_MS = 2000',
    '--',
    'controller/reconciler/spawn-decide.ts',
  ];
  const removedIn = execFileSync('git', args, { cwd: REPO, encoding: 'utf8' }).trim();
  if (!removedIn) throw new Error('no commit removed MESSAGE_POLL_MS; pass --baseline REF');
  return `${removedIn}^`;
}

/** The tree of `ref` in a temp dir, runnable with this repo's node_modules. */
export function extractTree(ref: string): { root: string; commit: string } {
  const commit = execFileSync('git', ['rev-parse', '--short', ref], { cwd: REPO, encoding: 'utf8' }).trim();
  const root = mkdtempSync(join(tmpdir(), `episodic-baseline-${commit}-`));
  mkdirSync(root, { recursive: true });
  const archive = execFileSync('git', ['archive', '--format=tar', commit], { cwd: REPO, maxBuffer: 512 << 20 });
  execFileSync('tar', ['-x', '-C', root], { input: archive });
  symlinkSync(join(REPO, 'node_modules'), join(root, 'node_modules'));
  return { root, commit };
}

export function cliOf(root: string): string {
  return join(root, 'controller/cli/main.ts');
}
