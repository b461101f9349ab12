import type { AgentTriggerSpec, ForgeSource } from '../../api/agent-trigger.ts';
import { webhookReportMissing } from '../../api/agent-trigger.ts';
import type { ForgeKind } from '../../api/forge-item.ts';

/** What reporting needs of a source: the forge's server and repo, the token, the item kind, the command. */
export type ReportSource = Pick<ForgeSource, 'repo' | 'kind' | 'tokenEnv' | 'tokenSecretRef' | 'command'> & {
  apiURL?: string;
};

/**
 * The forge a trigger reports to, the same for every source: a forge source itself, or a webhook source's
 * repo, apiURL and token (its items may be issues or PRs: the forge says which when it matters). Throws,
 * naming the fields, when a webhook source lacks them.
 */
export function reportTarget(spec: AgentTriggerSpec): { kind: ForgeKind; source: ReportSource } | undefined {
  const { gitea, github, webhook } = spec.source;
  if (gitea) return { kind: 'gitea', source: gitea };
  if (github) return { kind: 'github', source: github };
  if (!webhook) return undefined;
  const missing = webhookReportMissing(webhook);
  if (missing.length > 0)
    throw new Error(missing.map((m) => `spec.source.webhook.${m.field}: ${m.message}`).join('; '));
  return { kind: webhook.forge, source: { ...webhook, repo: webhook.repo as string, kind: 'issues' } };
}
