// The real agent CLIs the tests run (test/real-agents/): pinned versions, and where they live once
// installed. Cached outside the repo, one directory per package@version, so a machine installs each once.
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export type CliName = 'claude' | 'codex' | 'gemini';

export interface AgentCli {
  name: CliName;
  pkg: string;
  version: string;
  /** The package's bin, relative to its install directory. */
  bin: string;
}

export const AGENT_CLIS: readonly AgentCli[] = [
  { name: 'claude', pkg: '@anthropic-ai/claude-code', version: '2.1.330', bin: 'node_modules/.bin/claude' },
  { name: 'codex', pkg: '@openai/codex', version: '0.169.0', bin: 'node_modules/.bin/codex' },
  { name: 'gemini', pkg: '@google/gemini-cli', version: '0.61.0', bin: 'node_modules/.bin/gemini' },
];

/** EPISODIC_AGENT_CLIS_DIR, else $XDG_CACHE_HOME/episodic/agent-clis, else ~/.cache/episodic/agent-clis. */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.EPISODIC_AGENT_CLIS_DIR) return path.resolve(env.EPISODIC_AGENT_CLIS_DIR);
  const base = env.XDG_CACHE_HOME ? path.resolve(env.XDG_CACHE_HOME) : path.join(os.homedir(), '.cache');
  return path.join(base, 'episodic', 'agent-clis');
}

/** `<root>/<pkg>@<version>`, the scope's slash kept as a directory level: ~/.cache/…/@openai/codex@0.169.0. */
export function installDir(cli: AgentCli, root = cacheRoot()): string {
  return path.join(root, `${cli.pkg}@${cli.version}`);
}

/** Written last by the installer: a directory without it is a half-finished install. */
export const COMPLETE_MARKER = '.episodic-installed';

export function installedBin(cli: AgentCli, root = cacheRoot()): string | undefined {
  const dir = installDir(cli, root);
  const bin = path.join(dir, cli.bin);
  return existsSync(path.join(dir, COMPLETE_MARKER)) && existsSync(bin) ? bin : undefined;
}
