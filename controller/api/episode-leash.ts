// What an episode may spend through the model gateway, fixed when it starts (reconciler/spend-cap.ts makes
// and judges it): a StartEpisode action carries it to the executor, which hands it to the gateway.

/** Something other than the task's own cap that limits an episode's spend: what was left of it at the start. */
export interface LeftOver {
  /** "AgentBudget team-week", "maxCostUSD 5 of parent (its family's cap)". */
  what: string;
  usd?: number;
  tokens?: number;
  /**
   * A cap other episodes spend from at the same time (a family's): `key` names it, `counted` says, per other
   * member, the last episode whose spend `usd` already left out; the gateway adds their later metered spend.
   */
  shared?: { key: string; counted: Readonly<Record<string, number>> };
  /**
   * A rolling window's spend at the start that leaves the window later (an AgentBudget's slots), by when: the
   * room it gives back while the episode runs.
   */
  frees?: ReadonlyArray<Frees>;
}

/** Spend that leaves a rolling window at `atMs` (epoch ms). */
export interface Frees {
  atMs: number;
  usd: number;
  tokens: number;
}

export interface EpisodeLeash {
  /** The task's spend before this episode (USD; input + output tokens), and its caps. */
  task: { costUSD: number; tokens: number; maxCostUSD?: number; maxTokens?: number };
  others: LeftOver[];
}
