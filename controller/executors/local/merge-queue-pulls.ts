// Local mode's pull requests for the merge queue: a task a trigger created (its episodic.dev/trigger label)
// whose trigger opens PRs (spec.report.pullRequest) onto the task's `into` has the PR the trigger recorded in
// its status (status.pullRequests, by task name); until it is recorded the task waits. The forge client is the
// trigger's own forge with its token from the environment variable the trigger names (as its reports).
import { TRIGGER_LABEL } from '../../api/agent-trigger.ts';
import { openForge } from '../../forge/open-forge.ts';
import type { QueuePulls, QueueTask } from '../../core/merge-queue-ports.ts';
import type { SpecTrigger } from '../../sources/local/spec-files.ts';
import { envSecret, LocalTriggerStatus } from '../../sources/triggers/local-triggers.ts';
import { reportTarget } from '../../sources/triggers/trigger-reports.ts';

/** A local task as the queue's PR lookup needs it: where it came from. */
export interface PulledTask extends QueueTask {
  labels?: Readonly<Record<string, string>>;
}

export function localQueuePulls<T extends PulledTask>(
  stateDir: string,
  triggers: () => ReadonlyMap<string, SpecTrigger> | undefined,
): QueuePulls<T> {
  const status = new LocalTriggerStatus(stateDir);
  const reporting = (task: T) => {
    const name = task.labels?.[TRIGGER_LABEL];
    const trigger = name ? triggers()?.get(`${namespaceOf(task)}/${name}`) : undefined;
    const report = trigger?.spec?.report?.pullRequest;
    if (!trigger?.spec || !report || prBase(trigger.spec, report.base) !== stripHeads(task.spec.integrate?.into))
      return undefined;
    return { trigger, spec: trigger.spec };
  };
  const recorded = (task: T, key: string) =>
    status.read(key)?.pullRequests?.[task.key.slice(task.key.indexOf('/') + 1)];
  return {
    of(task) {
      const r = reporting(task);
      if (!r) return undefined;
      const pr = recorded(task, r.trigger.key);
      if (pr) return { number: pr.number };
      // The trigger opens a PR only for work that changed something (trigger-report-plan.ts publishDue).
      return task.status.workspaceChanges > 0 ? 'awaiting' : undefined;
    },
    async open(task) {
      const r = reporting(task);
      const pr = r && recorded(task, r.trigger.key);
      const target = r && reportTarget(r.spec);
      if (!r || !pr || !target) throw new Error(`${task.key}: no pull request recorded by its trigger`);
      const token = await envSecret(target.source);
      const forge = openForge({ forge: target.kind, repo: target.source.repo, apiURL: target.source.apiURL, token });
      return { number: pr.number, url: pr.url, forge };
    },
  };
}

/** The branch a trigger's PRs target: report.pullRequest.base, else its template's git ref (trigger-report-plan.ts). */
function prBase(spec: NonNullable<SpecTrigger['spec']>, base: string | undefined): string | undefined {
  const ws = spec.template.spec.workspace;
  const ref = ws && typeof ws === 'object' && 'git' in ws ? ws.git.ref : undefined;
  return stripHeads(base ?? ref);
}

function stripHeads(ref: string | undefined): string | undefined {
  return ref?.replace(/^refs\/heads\//, '');
}

const namespaceOf = (task: QueueTask) => task.key.slice(0, task.key.indexOf('/'));
