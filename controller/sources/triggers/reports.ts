// Reports back to the forge (spec.report.comment): one comment per item's task, edited in place as the task
// moves — phase, episodes, cost and why it stopped. A hidden marker names trigger and task, so a controller
// that lost its status finds its own comment again instead of posting a second one. Only the controller's
// text and the task's status go in; item text never does.
import { clip } from '../../api/bounds.ts';
import type { AgentTriggerStatus } from '../../api/agent-trigger.ts';
import type { GiteaClient } from './gitea-client.ts';

export interface TaskReport {
  phase?: string;
  episodes: number;
  costUSD: number;
  reason?: string;
  message?: string;
}

export function reportMarker(trigger: string, task: string): string {
  return `<!-- episodic:report ${trigger}/${task} -->`;
}

export function reportBody(trigger: string, task: string, r: TaskReport | undefined): string {
  const phase = r?.phase ?? 'Pending';
  const lines = [
    reportMarker(trigger, task),
    `**episodic** task \`${task}\`: **${phase}**${r?.reason ? ` (${r.reason})` : ''} · ${r?.episodes ?? 0} episode(s) · $${(r?.costUSD ?? 0).toFixed(2)}`,
  ];
  if (r?.message && phase !== 'Running' && phase !== 'Pending')
    lines.push('', `> ${clip(r.message.replace(/\s+/g, ' '), 300)}`);
  if (phase === 'NeedsReview')
    lines.push('', `Resume it with \`episodic resume ${task}\` once the reason is dealt with.`);
  return lines.join('\n');
}

/** Creates or edits the report comment of each task whose report changed; keeps status.reports to the tasks given. */
export async function reportTasks(input: {
  client: GiteaClient;
  repo: string;
  trigger: string;
  self: string | undefined;
  tasks: Array<{ name: string; item: number; report: TaskReport | undefined }>;
  status: AgentTriggerStatus;
}): Promise<void> {
  const before = input.status.reports ?? {};
  const after: NonNullable<AgentTriggerStatus['reports']> = {};
  for (const t of input.tasks) {
    const body = reportBody(input.trigger, t.name, t.report);
    const known = before[t.name];
    if (known?.body === body) {
      after[t.name] = known;
      continue;
    }
    const id = known?.comment ?? (await findOwn(input, t.item, reportMarker(input.trigger, t.name)));
    if (id) await input.client.editComment(input.repo, id, body);
    const comment = id ?? (await input.client.createComment(input.repo, t.item, body));
    after[t.name] = { comment, body };
  }
  input.status.reports = after;
}

/** The controller's own comment carrying the marker, if a previous run posted one. */
async function findOwn(
  input: { client: GiteaClient; repo: string; self: string | undefined },
  item: number,
  marker: string,
) {
  const comments = await input.client.comments(input.repo, item);
  return comments.find((c) => c.body.startsWith(marker) && (!input.self || c.author === input.self))?.id;
}
