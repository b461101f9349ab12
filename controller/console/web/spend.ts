// What an episode counted for: the gateway's meter when it ran behind one, else the agent's own report
// (api/episode-record.ts countedUSD; not imported: the page bundles no zod).
import type { EpisodeRecord } from '../../api/episode-record.ts';

export function spentUSD(e: Pick<EpisodeRecord, 'costUSD' | 'gateway'>): number {
  return e.gateway?.costUSD ?? e.costUSD;
}
