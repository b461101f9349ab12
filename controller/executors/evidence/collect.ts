// The evidence of one episode, gathered after it ended: the same for a local process and the runner in a pod.
// A git workspace's evidence comes later, from the checkpoint's own staging (checkpoint.ts).
import type { EpisodeResult } from '../../api/episode-result.ts';
import type { Evidence } from '../../api/leash.ts';
import { readChecklist } from './checklist.ts';
import { errorFingerprint } from './fingerprint.ts';
import { insideWorkspace } from './inside-workspace.ts';
import { collectReview } from './review.ts';
import type { ReviewSnapshot } from './review.ts';
import { compareDirectories, snapshotWorkspace } from './workspace.ts';
import type { SnapshotOptions, WorkspaceSnapshot } from './workspace.ts';

export interface EvidenceRequest {
  workspace: string;
  /** The snapshot taken before the agent started. */
  before?: WorkspaceSnapshot;
  /** spec.progress.checklist: a path inside the workspace. */
  checklist?: string;
  snapshot?: SnapshotOptions;
  /** DISCOVERY.md and IDEAS.md before the agent started: with it, the evidence says what needs a person. */
  reviewBefore?: ReviewSnapshot;
}

export async function collectEvidence(req: EvidenceRequest, result: EpisodeResult): Promise<Evidence> {
  const evidence: Evidence = { ...result.evidence }; // what the output said (RALPH_STATUS, keywords)
  if (req.before?.kind === 'directory') {
    const after = await snapshotWorkspace(req.workspace, { exclude: req.snapshot?.exclude });
    const workspace = after && compareDirectories(req.before, after);
    if (workspace) evidence.workspace = workspace;
  }
  const plan = req.checklist ? insideWorkspace(req.workspace, req.checklist) : undefined;
  const checklist = plan ? readChecklist(plan) : undefined;
  if (checklist) evidence.checklist = checklist;
  if (req.reviewBefore) evidence.review = collectReview(req.workspace, req.reviewBefore, req.checklist);
  const failed = result.exitCode !== 0 || result.agentError || result.errorClass !== 'none' || result.timedOut;
  const fingerprint = failed ? errorFingerprint(result.message) : undefined;
  if (fingerprint) evidence.errorFingerprint = fingerprint;
  return evidence;
}
