// Completion that needs evidence: a completion signal counts only with what spec.completion requires; with
// completion.signals, weak signals of the final answer and the workspace add up to one (Gluon's score).
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import type { ChecklistCounts, Evidence } from '../api/leash.ts';
import { classifyOutcome } from './outcome.ts';
import type { ClassifiedOutcome } from './outcome.ts';

export function checklistComplete(c: ChecklistCounts | undefined): boolean {
  return !!c && c.total > 0 && c.done + c.skipped === c.total;
}

/**
 * A clean exit without a claim that still meets the completion rule (completion.checklist and a complete plan
 * file): judgeEpisode's ChecklistComplete, and for the executor the cue to run the step's gates as after a claim.
 */
export function checklistMeetsCompletion(
  completion: Pick<AgentTaskSpec['completion'], 'checklist'>,
  checklist: ChecklistCounts | undefined,
): boolean {
  return completion.checklist && checklistComplete(checklist);
}

/** What a completion claim lacks, one phrase each; empty when it may stand. `status` already counts this episode. */
export function missingEvidence(
  completion: AgentTaskSpec['completion'],
  result: EpisodeResult,
  status: AgentTaskStatus,
): string[] {
  const missing: string[] = [];
  if (status.episodes < completion.minEpisodes)
    missing.push(`minEpisodes (episode ${status.episodes} of at least ${completion.minEpisodes})`);
  for (const need of completion.requires) {
    if (need === 'verify' && result.verifyExitCode !== 0) missing.push('verify (the verify command did not pass)');
    if (need === 'changes' && status.workspaceChanges === 0)
      missing.push('changes (no episode of this run changed the workspace)');
    if (need === 'cleanTree' && result.evidence?.workspace?.dirty !== false) {
      missing.push(
        result.evidence?.workspace?.dirty
          ? 'cleanTree (uncommitted changes are left)'
          : 'cleanTree (the workspace is not a git repository)',
      );
    }
    if (need === 'checklist' && !checklistComplete(result.evidence?.checklist)) {
      const c = result.evidence?.checklist;
      missing.push(c ? `checklist (${c.done + c.skipped}/${c.total} done)` : 'checklist (no checklist was read)');
    }
  }
  return missing;
}

/** Points per signal of completion.signals (Gluon's confidence score). */
export const SIGNAL_POINTS = { exitSignal: 50, checklist: 40, keyword: 10, maxKeywords: 2, testOnly: 100 } as const;
/** Test-only episodes in a row that mean the work is done and only being verified. */
export const TEST_ONLY_EPISODES = 3;

export interface CompletionScore {
  score: number;
  /** What scored, e.g. ['exitSignal+50', 'checklist+40']. */
  signals: string[];
}

/** The score of one episode's evidence, given the test-only streak that includes it. */
export function completionScore(evidence: Evidence | undefined, testOnlyEpisodes: number): CompletionScore {
  const signals: string[] = [];
  let score = 0;
  const add = (name: string, points: number): void => {
    score += points;
    signals.push(`${name}+${points}`);
  };
  if (evidence?.ralph?.exitSignal === true) add('exitSignal', SIGNAL_POINTS.exitSignal);
  if (checklistComplete(evidence?.checklist)) add('checklist', SIGNAL_POINTS.checklist);
  const keywords = Math.min(evidence?.completionKeywords?.length ?? 0, SIGNAL_POINTS.maxKeywords);
  if (keywords > 0) add('keywords', keywords * SIGNAL_POINTS.keyword);
  if (testOnlyEpisodes >= TEST_ONLY_EPISODES) add('testOnly', SIGNAL_POINTS.testOnly);
  return { score, signals };
}

/**
 * The test-only streak after this episode: +1 for a clean exit that says WORK_TYPE TESTING and left the
 * workspace unchanged (evidence required); outages, cancels and interruptions leave it as it was.
 */
export function countTestOnly(previous: number, result: EpisodeResult): number {
  if (result.cancelled || result.interrupted || result.errorClass === 'transient' || result.errorClass === 'usageLimit')
    return previous;
  const clean = result.exitCode === 0 && !result.agentError && !result.timedOut;
  const testing = /^testing$/i.test(result.evidence?.ralph?.workType ?? '');
  return clean && testing && result.evidence?.workspace?.changed === false ? previous + 1 : 0;
}

export interface JudgedEpisode extends ClassifiedOutcome {
  /** What a rejected claim lacked. */
  missing?: string;
  /** With completion.signals: this episode's score. */
  score?: CompletionScore;
}

/**
 * The outcome, with the leash's completion rules on top of the signals: a complete checklist or a high
 * enough score can finish the task, and a claim without the evidence spec.completion requires only
 * continues. `counted` already counts this episode (episodes, workspaceChanges, testOnlyEpisodes).
 */
export function judgeEpisode(
  result: EpisodeResult,
  completion: AgentTaskSpec['completion'],
  counted: AgentTaskStatus,
): JudgedEpisode {
  const signals = completion.signals;
  let judged: JudgedEpisode = classifyOutcome(result, completion);
  const score = signals ? completionScore(result.evidence, counted.testOnlyEpisodes ?? 0) : undefined;
  if (judged.outcome === 'continue' && checklistMeetsCompletion(completion, result.evidence?.checklist)) {
    judged = { outcome: 'succeeded', reason: 'ChecklistComplete' };
  }
  if (judged.outcome === 'continue' && signals && score && score.score >= signals.threshold) {
    // The executor runs verify after a score claim (keywords, EXIT_SIGNAL, a test-only episode).
    const verify = result.verifyExitCode;
    if (completion.verify && verify === undefined)
      judged = { outcome: 'continue', reason: 'MissingEvidence', missing: 'verify (the verify command did not run)' };
    else if (completion.verify && verify !== 0) judged = { outcome: 'failed', reason: 'VerifyFailed' };
    else judged = { outcome: 'succeeded', reason: 'SignalsScore' };
  }
  if (score) judged.score = score;
  if (judged.outcome !== 'succeeded') return judged;
  const missing = missingEvidence(completion, result, counted);
  return missing.length === 0
    ? judged
    : { ...judged, outcome: 'continue', reason: 'MissingEvidence', missing: missing.join(', ') };
}
