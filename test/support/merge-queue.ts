// The merge queue's local end-to-end tests' parts (test/local/merge-queue*.test.ts): a bare origin with
// shared.txt, a task whose stand-in agent edits one line on its branch, and the checks on `main` and the clone.
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE, REPO } from './local.ts';

const AGENT = join(REPO, 'test/agents/merge-agent.mjs');
import { git } from './git.ts';

export { git };

/** `count` numbered lines ("line 1"…), as shared.txt holds them. */
export const numberedLines = (count: number) =>
  `${Array.from({ length: count }, (_, i) => `line ${i + 1}`).join('\n')}\n`;

/** origin.git in `dir` with main holding shared.txt (60 numbered lines unless `shared`); `branches` start there too. */
export function origin(dir: string, opts: { shared?: string; branches?: readonly string[] } = {}): string {
  const bare = join(dir, 'origin.git');
  git(dir, 'init', '--quiet', '--bare', '-b', 'main', bare);
  const seed = join(dir, 'seed');
  git(dir, 'clone', '--quiet', bare, seed);
  writeFileSync(join(seed, 'shared.txt'), opts.shared ?? numberedLines(60));
  git(seed, 'add', '.');
  git(seed, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', 'seed');
  const branches = (opts.branches ?? []).map((b) => `HEAD:refs/heads/${b}`);
  git(seed, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main', ...branches);
  return bare;
}

export function task(name: string, env: Record<string, string>, integrate: Record<string, unknown> = {}) {
  return {
    name,
    spec: {
      agent: {
        command: [NODE, AGENT],
        output: 'text',
        env: Object.entries(env).map(([n, value]) => ({ name: n, value })),
      },
      completion: { onExitZero: true },
      workspace: { git: { url: 'origin.git', ref: `work/${name}` } },
      integrate: { into: 'main', queue: 'q', ...integrate },
    },
  };
}

export function assertLinear(bare: string, commits: number) {
  assert.equal(git(bare, 'rev-list', '--merges', 'main'), '', 'no merge commits on main');
  assert.equal(git(bare, 'rev-list', '--count', 'main'), String(commits));
}

export function assertNoLeftovers(dir: string) {
  const q = join(dir, '.episodic/merge-queue/q');
  assert.equal(existsSync(join(q, 'journal.json')), false, 'no journal left');
  for (const f of ['index.lock', 'rebase-merge', 'rebase-apply'])
    assert.equal(existsSync(join(q, 'clone/.git', f)), false, f);
  assert.equal(git(join(q, 'clone'), 'status', '--porcelain'), '', 'clean clone');
}

export const lineEdit = (line: number, text: string) => ({
  MERGE_AGENT_FILE: 'shared.txt',
  MERGE_AGENT_LINE: String(line),
  MERGE_AGENT_TEXT: text,
});

export function assertOnceOnMain(bare: string, names: string[]) {
  const main = git(bare, 'show', 'main:shared.txt').split('\n');
  for (const n of names) assert.equal(main.filter((l) => l === n).length, 1, `${n} once on main`);
}
