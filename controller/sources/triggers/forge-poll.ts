// A forge trigger's poll through the forge layer: GiteaForge for source.gitea, GitHubForge for source.github
// (forge/open-forge.ts), one instance per trigger kept across passes (GitHub's ETags and the token's login
// live in it). Efficiency: GitHub asks the same URL with If-None-Match, so nothing new is one request
// answered 304; Gitea sends no ETag on issue lists, so the poll narrows with since= (inclusive to the
// second: what was handled at exactly the cursor, by fingerprint, is dropped). Comments for commands come
// from one repo-wide list since the cursor, read only when some item changed. What the poll saw is a fact for
// reconcileTrigger; the cursor's rules are reconciler/trigger-cursor.ts's.
import { createHash } from 'node:crypto';
import type { AgentTriggerStatus, ForgeSource } from '../../api/agent-trigger.ts';
import { openForge } from '../../forge/open-forge.ts';
import type { Forge, ForgeRequestCounter } from '../../forge/types.ts';
import type { ForgeComment, ForgeItem, ForgeKind } from '../../api/forge-item.ts';
import { ForgeRateLimitedError, ForgeRequestError, ForgeUnavailableError } from '../../forge/types.ts';
import { newSinceCursor, type Poll } from '../../reconciler/trigger-cursor.ts';
import type { TriggerFailure } from '../../reconciler/trigger-timing.ts';

/** One Forge per trigger, replaced when its forge, server, repo or token changes. */
export class TriggerForges {
  private readonly forges = new Map<string, { id: string; forge: Forge }>();

  open(
    key: string,
    kind: ForgeKind,
    source: { repo: string; apiURL?: string },
    token: string | undefined,
    opts: { metrics?: ForgeRequestCounter; now: () => Date },
  ): Forge {
    const tokenHash = token ? createHash('sha256').update(token).digest('hex') : '';
    const id = `${kind} ${source.apiURL} ${source.repo} ${tokenHash}`;
    const known = this.forges.get(key);
    if (known?.id === id) return known.forge;
    const forge = openForge({ forge: kind, repo: source.repo, apiURL: source.apiURL, token, ...opts });
    this.forges.set(key, { id, forge });
    return forge;
  }

  /** Triggers that are gone leave nothing behind. */
  retain(keys: Set<string>): void {
    for (const key of this.forges.keys()) if (!keys.has(key)) this.forges.delete(key);
  }
}

/** Open items changed since status.cursor, minus those handled at exactly the cursor; their new comments. */
export async function pollForge(forge: Forge, source: ForgeSource, status: AgentTriggerStatus): Promise<Poll> {
  // With a command any open item may match, so the label filter is only the forge's when there is none.
  const labels = source.command ? undefined : source.labels;
  const listed = await forge.listItems({ kind: source.kind, labels, since: status.cursor });
  if (listed.kind === 'rateLimited') throw new ForgeRateLimitedError(`${forge.kind} rate limit`, listed.resetAt);
  if (listed.kind === 'unchanged') return listed;
  const polled = newSinceCursor(
    status,
    listed.entries.map((item) => ({ item, fingerprint: fingerprint(item) })),
  );
  const comments = source.command && polled.length > 0 ? await newComments(forge, status.cursor) : [];
  const seen = polled.map((p) => ({
    item: p.item,
    comments: comments.filter((c) => c.itemNumber === p.item.number),
  }));
  return { kind: 'listed', polled, seen };
}

/** What a failed pass observed, for reconcileTrigger's backoff: the forge's rate limit, the forge, or anything else. */
export function failureOf(err: unknown): TriggerFailure {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof ForgeRateLimitedError) return { kind: 'rateLimited', resetAt: err.resetAt, message };
  if (err instanceof ForgeUnavailableError || err instanceof ForgeRequestError) return { kind: 'forge', message };
  return { kind: 'other', message };
}

async function newComments(forge: Forge, since: string | undefined): Promise<ForgeComment[]> {
  const listed = await forge.listComments({ since });
  if (listed.kind === 'rateLimited') throw new ForgeRateLimitedError(`${forge.kind} rate limit`, listed.resetAt);
  // 304: no comment changed since the list's last answer (it was read then, with the items it bumped).
  return listed.kind === 'listed' ? listed.entries : [];
}

function fingerprint(item: ForgeItem): string {
  const labels = createHash('sha256')
    .update([...item.labels].sort().join('\n'))
    .digest('hex')
    .slice(0, 12);
  return `${item.number}:${item.open ? 'open' : 'closed'}:${item.comments ?? 0}:${labels}`;
}
