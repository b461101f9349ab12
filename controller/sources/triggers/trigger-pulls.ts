// The merge queue's pull requests, one rule for both modes (issue 32 §3): a task a trigger created (its
// episodic.dev/trigger label) whose trigger opens PRs (spec.report.pullRequest) onto the task's `into` has the
// PR the trigger recorded in its status (status.pullRequests, by task name); until it is recorded the task
// waits. The forge client is the trigger's own forge with the trigger's token (as its reports). Each mode
// says where triggers, their status and their tokens are (local: files and env; cluster: informer and Secrets).
import type { AgentTriggerSpec, AgentTriggerStatus } from '../../api/agent-trigger.ts';
import { TRIGGER_LABEL } from '../../api/agent-trigger.ts';
import type { QueuePulls, QueueTask } from '../../core/merge-queue-ports.ts';
import { openForge } from '../../forge/open-forge.ts';
import { type ReportSource, reportTarget } from './trigger-reports.ts';

/** Where a mode keeps its triggers (by key NS/NAME), what they recorded, and their tokens. */
export interface TriggerPullSources {
  /** The trigger's valid spec; undefined when there is none (or it does not validate). */
  spec(key: string): AgentTriggerSpec | undefined;
  pullRequests(key: string): AgentTriggerStatus['pullRequests'];
  token(source: ReportSource, namespace: string): Promise<string | undefined>;
}

export function triggerQueuePulls<T extends QueueTask>(triggers: TriggerPullSources): QueuePulls<T> {
  const reporting = (task: T) => {
    const name = task.labels?.[TRIGGER_LABEL];
    const key = name ? `${namespaceOf(task)}/${name}` : undefined;
    const spec = key ? triggers.spec(key) : undefined;
    const report = spec?.report?.pullRequest;
    if (!key || !spec || !report || prBase(spec, report.base) !== stripHeads(task.spec.integrate?.into))
      return undefined;
    return { key, spec };
  };
  const recorded = (task: T, key: string) => triggers.pullRequests(key)?.[task.key.slice(task.key.indexOf('/') + 1)];
  return {
    of(task) {
      const r = reporting(task);
      if (!r) return undefined;
      const pr = recorded(task, r.key);
      if (pr) return { number: pr.number };
      // The trigger opens a PR only for work that changed something (trigger-report-plan.ts publishDue).
      return task.status.workspaceChanges > 0 ? 'awaiting' : undefined;
    },
    async open(task) {
      const r = reporting(task);
      const pr = r && recorded(task, r.key);
      const target = r && reportTarget(r.spec);
      if (!r || !pr || !target) throw new Error(`${task.key}: no pull request recorded by its trigger`);
      const token = await triggers.token(target.source, namespaceOf(task));
      const forge = openForge({ forge: target.kind, repo: target.source.repo, apiURL: target.source.apiURL, token });
      return { number: pr.number, url: pr.url, forge };
    },
  };
}

/** The branch a trigger's PRs target: report.pullRequest.base, else its template's git ref (trigger-report-plan.ts). */
function prBase(spec: AgentTriggerSpec, base: string | undefined): string | undefined {
  const ws = spec.template.spec.workspace;
  const ref = ws && typeof ws === 'object' && 'git' in ws ? ws.git.ref : undefined;
  return stripHeads(base ?? ref);
}

function stripHeads(ref: string | undefined): string | undefined {
  return ref?.replace(/^refs\/heads\//, '');
}

const namespaceOf = (task: QueueTask) => task.key.slice(0, task.key.indexOf('/'));
