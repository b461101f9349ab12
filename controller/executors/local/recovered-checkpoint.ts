// An episode that ended while no controller ran (killed between the agent's exit and its checkpoint) is
// checkpointed when the next controller records it, as a live one is: otherwise its work stays uncommitted
// and unpushed, and its record says it changed nothing (best-of-N then chose a bigger attempt in CI).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentTaskSpec } from '../../api/agent-task.ts';
import type { EpisodeResult } from '../../api/episode-result.ts';
import { branchName, git } from '../../git/git-workspace.ts';
import { stateWorkspaceDir } from '../../util/state-layout.ts';
import type { GitSnapshot } from '../evidence/workspace.ts';
import { checkpointLocalEpisode } from './episode-checkpoint.ts';
import type { LocalEpisodeEnd } from './episode-checkpoint.ts';
import { localWorkspace } from './workspace.ts';
import { gitWorkspaceOf } from '../../api/git-workspace.ts';

/** An episode's end as the checkpoint needs it, but its workspace and starting point are found here. */
export type RecoveredEpisode = Omit<LocalEpisodeEnd, 'workspace' | 'before' | 'scoped' | 'reviewBefore'>;

/** The recovered result with its workspace evidence and checkpoint; unchanged where there is no workspace. */
export async function checkpointRecovered(result: EpisodeResult, ep: RecoveredEpisode): Promise<EpisodeResult> {
  const workspace = recoveredWorkspace(ep);
  if (!workspace || !existsSync(workspace)) return result;
  const before = await startingPoint(workspace, ep.spec);
  const settled = await checkpointLocalEpisode(result, { ...ep, workspace, before }).catch(() => undefined);
  return settled?.result ?? result;
}

/** Where the episode ran: a git workspace's clone under the state dir, else its directory (never created here). */
function recoveredWorkspace(ep: RecoveredEpisode): string | undefined {
  if (gitWorkspaceOf(ep.spec.workspace)) return stateWorkspaceDir(ep.stateDir, ep.task.namespace, ep.task.name);
  const created = ep.task.created ? { stateDir: ep.stateDir, namespace: ep.task.namespace } : undefined;
  const local = localWorkspace(ep.task.file, ep.task.name, ep.spec, created);
  return local && 'dir' in local ? local.dir : undefined;
}

/**
 * What the episode started from, as best known after the fact: a clone's last push (each episode's end pushes,
 * so it spans the agent's own commits), else HEAD with a clean tree (each checkpoint leaves one).
 */
async function startingPoint(dir: string, spec: AgentTaskSpec): Promise<GitSnapshot | undefined> {
  if (!existsSync(join(dir, '.git'))) return undefined;
  const source = gitWorkspaceOf(spec.workspace);
  const pushed = source ? [`refs/remotes/origin/${branchName(source.ref)}`] : [];
  for (const ref of [...pushed, 'HEAD']) {
    const out = await git({}, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { cwd: dir, allowExit: [1] });
    if (out.code === 0 && out.stdout.trim()) return { kind: 'git', head: out.stdout.trim(), status: '' };
  }
  return undefined;
}
