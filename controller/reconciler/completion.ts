// Completion that needs evidence: a completion signal counts only with what spec.completion requires.
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import type { ChecklistCounts } from '../api/leash.ts';

export function checklistComplete(c: ChecklistCounts | undefined): boolean {
  return !!c && c.total > 0 && c.done + c.skipped === c.total;
}

/** What a completion claim lacks, one phrase each; empty when it may stand. `status` already counts this episode. */
export function missingEvidence(completion: AgentTaskSpec['completion'], result: EpisodeResult, status: AgentTaskStatus): string[] {
  const missing: string[] = [];
  if (status.episodes < completion.minEpisodes) missing.push(`minEpisodes (episode ${status.episodes} of at least ${completion.minEpisodes})`);
  for (const need of completion.requires) {
    if (need === 'verify' && result.verifyExitCode !== 0) missing.push('verify (the verify command did not pass)');
    if (need === 'changes' && status.workspaceChanges === 0) missing.push('changes (no episode of this run changed the workspace)');
    if (need === 'cleanTree' && result.evidence?.workspace?.dirty !== false) {
      missing.push(result.evidence?.workspace?.dirty ? 'cleanTree (uncommitted changes are left)' : 'cleanTree (the workspace is not a git repository)');
    }
    if (need === 'checklist' && !checklistComplete(result.evidence?.checklist)) {
      const c = result.evidence?.checklist;
      missing.push(c ? `checklist (${c.done + c.skipped}/${c.total} done)` : 'checklist (no checklist was read)');
    }
  }
  return missing;
}
