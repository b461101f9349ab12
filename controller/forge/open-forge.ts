// One way for the loop to get a Forge from a trigger's source (github or gitea), the token already read
// from its Secret or environment variable.
import { GiteaForge } from './gitea.ts';
import { GitHubForge } from './github.ts';
import type { Forge, ForgeRequestCounter } from './types.ts';
import type { ForgeKind } from '../api/forge-item.ts';

export interface ForgeSource {
  forge: ForgeKind;
  /** OWNER/NAME */
  repo: string;
  /** Gitea: required (the server); GitHub: https://api.github.com unless given. */
  apiURL?: string;
  /** Optional: anonymous polling of a public repo works; reports need one. */
  token?: string;
  metrics?: ForgeRequestCounter;
  now?: () => Date;
}

export function openForge(source: ForgeSource): Forge {
  if (source.forge === 'github') return new GitHubForge(source);
  if (!source.apiURL) throw new Error('a gitea source needs apiURL (its server)');
  return new GiteaForge({ ...source, apiURL: source.apiURL });
}
