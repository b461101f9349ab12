// Best-of-N's git steps on a cluster, done by the controller in a clone of its own (under `dir`): adopting the
// winner (fast-forward the task's branch to the winner's, push, delete the losers') and the judge's diffs (each
// attempt's branch against the commit it left). Only git runs here, never project code, so no pod is needed;
// the attempts' pods pushed their branches, and the remote is the one place all of them meet.
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { AdoptOutcome } from '../../api/attempts.ts';
import { JUDGE_DIFF_MAX } from '../../api/attempts.ts';
import type { AdoptWinner, ClusterTask } from '../../core/ports.ts';
import { adoptBranch, remoteBranchDiff } from '../../git/adopt-branch.ts';
import { prepareGitWorkspace } from '../../git/git-workspace.ts';
import type { GitWorkspace } from '../../git/git-workspace.ts';
import type { KubeClient } from '../../kube/kube-client.ts';
import { readGitCredentials } from './git-secret.ts';
import type { Lookup } from './git-secret.ts';
import { gitWorkspaceOf } from '../../api/git-workspace.ts';

export interface AttemptsGitOptions {
  client: KubeClient;
  /** Where the controller keeps its clones (one per task while its attempts are judged and adopted). */
  dir: string;
}

export class ClusterAttemptsGit {
  private readonly opts: AttemptsGitOptions;

  constructor(opts: AttemptsGitOptions) {
    this.opts = opts;
  }

  /** The AdoptWinner action: idempotent (a restart clones again and finds the branch already moved). */
  async adopt(task: ClusterTask, action: AdoptWinner): Promise<AdoptOutcome> {
    const said = { winner: action.winner, from: action.from };
    const ws = await this.workspace(task, action.into);
    if (!ws.ok) return { ...said, ok: false, message: ws.message };
    const result = await adoptBranch(ws.value, action.from, action.deleteBranches);
    if (result.ok) await rm(ws.value.dir, { recursive: true, force: true });
    return { ...said, ...result };
  }

  /** Each attempt's diff (stat and patch, at most JUDGE_DIFF_MAX characters) against the task's branch. */
  async diffs(task: ClusterTask, attempts: readonly { number: number; branch?: string }[]) {
    const out: Record<number, string> = {};
    const ref = gitSpec(task)?.ref;
    const ws = ref ? await this.workspace(task, ref) : undefined;
    if (!ws?.ok) return out;
    const prepared = await prepareGitWorkspace(ws.value);
    if (!prepared.ok) return out;
    for (const a of attempts) {
      const diff = a.branch ? await remoteBranchDiff(ws.value, a.branch) : undefined;
      if (diff !== undefined) out[a.number] = diff.slice(0, JUDGE_DIFF_MAX);
    }
    return out;
  }

  async forget(namespace: string, name: string): Promise<void> {
    await rm(this.cloneDir(namespace, name), { recursive: true, force: true });
  }

  private cloneDir(namespace: string, name: string): string {
    // Both are Kubernetes names (DNS labels/subdomains): safe as path segments.
    return path.join(this.opts.dir, namespace, name);
  }

  private async workspace(task: ClusterTask, ref: string): Promise<Lookup<GitWorkspace>> {
    const git = gitSpec(task);
    if (!git) return { ok: false, message: 'spec.workspace: attempts need a git workspace' };
    const credentials = git.secretRef
      ? await readGitCredentials(this.opts.client, task.namespace, git.secretRef.name)
      : undefined;
    if (credentials && !credentials.ok) return credentials;
    return {
      ok: true,
      value: {
        url: git.url,
        ref,
        from: git.from,
        dir: this.cloneDir(task.namespace, task.name),
        credentials: credentials?.value,
        log: () => undefined, // failures come back in the step's message
      },
    };
  }
}

function gitSpec(task: ClusterTask) {
  return gitWorkspaceOf(task.spec?.workspace);
}
