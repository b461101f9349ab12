// The evidence of one episode, gathered after it ended: the same for a local process and the runner in a pod.
import { realpathSync } from 'node:fs';
import { resolve, sep } from 'node:path';
import type { EpisodeResult } from '../../api/episode-result.ts';
import type { Evidence } from '../../api/leash.ts';
import { readChecklist } from './checklist.ts';
import { errorFingerprint } from './fingerprint.ts';
import { compareWorkspace, snapshotWorkspace } from './workspace.ts';
import type { SnapshotOptions, WorkspaceSnapshot } from './workspace.ts';

export interface EvidenceRequest {
  workspace: string;
  /** The snapshot taken before the agent started. */
  before?: WorkspaceSnapshot;
  /** spec.progress.checklist: a path inside the workspace. */
  checklist?: string;
  snapshot?: SnapshotOptions;
}

export async function collectEvidence(req: EvidenceRequest, result: EpisodeResult): Promise<Evidence> {
  const evidence: Evidence = { ...result.evidence }; // what the output said (RALPH_STATUS, keywords)
  const after = req.before ? await snapshotWorkspace(req.workspace, req.snapshot) : undefined;
  if (req.before && after) evidence.workspace = await compareWorkspace(req.workspace, req.before, after);
  const plan = req.checklist ? insideWorkspace(req.workspace, req.checklist) : undefined;
  const checklist = plan ? readChecklist(plan) : undefined;
  if (checklist) evidence.checklist = checklist;
  const failed = result.exitCode !== 0 || result.agentError || result.errorClass !== 'none' || result.timedOut;
  const fingerprint = failed ? errorFingerprint(result.message) : undefined;
  if (fingerprint) evidence.errorFingerprint = fingerprint;
  return evidence;
}

/** The plan file's path if it stays inside the workspace, symlinks followed; else undefined. */
function insideWorkspace(workspace: string, path: string): string | undefined {
  try {
    const root = realpathSync(workspace);
    const real = realpathSync(resolve(root, path));
    return real === root || real.startsWith(root + sep) ? real : undefined;
  } catch {
    return undefined;
  }
}
