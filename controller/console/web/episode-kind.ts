// What a timeline mark's colour says about an episode: a pure rule (no DOM) so it is table-tested beside the
// stylesheet's .o-KIND colours (test/console/episode-kind.test.ts).
import type { EpisodeRecord } from '../../api/episode-record.ts';

export const KIND_WORDS: Record<string, string> = {
  gateFailed: 'a gate failed (a fix episode follows)',
  retry: 'retried',
  usageLimit: 'usage limit: waited',
  cancel: 'cancelled',
};

/** A failed gate over the outcome (the agent may have said "continue"), then the waits and retries and
 * cancels, each its own colour; else the outcome itself. */
export function kindOf(e: Pick<EpisodeRecord, 'outcome' | 'gates'>): string {
  if (e.gates?.some((g) => g.exitCode !== 0)) return 'gateFailed';
  if (e.outcome === 'transient' || e.outcome === 'timeout') return 'retry';
  if (e.outcome === 'cancelled' || e.outcome === 'interrupted') return 'cancel';
  return e.outcome;
}

/** The legend's kinds, in the order shown, with their words. */
export const LEGEND: ReadonlyArray<readonly [string, string]> = [
  ['succeeded', 'succeeded'],
  ['continue', 'continue'],
  ['gateFailed', 'gate failed'],
  ['retry', 'retry'],
  ['usageLimit', 'usage limit'],
  ['cancel', 'cancel'],
  ['failed', 'failed'],
  ['running', 'running'],
];

/** A mark's hover words: the outcome, and what its colour adds when that says more. */
export function kindWords(kind: string, outcome: string): string {
  const words = KIND_WORDS[kind];
  if (!words || words === outcome) return outcome;
  return kind === outcome ? words : `${outcome}, ${words}`;
}
