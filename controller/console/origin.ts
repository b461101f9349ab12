// Where a task came from, from its labels: the task that spawned it (episodic.dev/parent), the trigger that
// made it (episodic.dev/trigger), and the forge item or schedule tick it was made for. The item's web URL is
// built from the trigger's own spec (trusted config), never from item text, and only ever as http(s).
import { OWNER_LABELS } from '../api/spawn-fields.ts';
import { ITEM_LABEL } from '../reconciler/trigger-items.ts';
import { TICK_LABEL } from '../reconciler/trigger-schedule.ts';

export interface TaskOrigin {
  /** "namespace/name" of the task that spawned it. */
  parent?: string;
  /** "namespace/name" of the trigger that made it. */
  trigger?: string;
  /** The forge item it was made for: its number, and its page when the trigger's source names the forge. */
  item?: { number: number; url?: string };
  /** A schedule task's tick (RFC 3339). */
  tick?: string;
}

export function originOf(
  namespace: string,
  labels: Readonly<Record<string, string>> | undefined,
  triggerSpec: (key: string) => unknown,
): TaskOrigin {
  const out: TaskOrigin = {};
  const parent = labels?.[OWNER_LABELS.AgentTask];
  if (parent) out.parent = `${namespace}/${parent}`;
  const trigger = labels?.[OWNER_LABELS.AgentTrigger];
  if (trigger) out.trigger = `${namespace}/${trigger}`;
  const number = Number(labels?.[ITEM_LABEL]);
  if (Number.isInteger(number) && number > 0)
    out.item = { number, url: out.trigger ? itemUrl(triggerSpec(out.trigger), number) : undefined };
  const tick = Number(labels?.[TICK_LABEL]);
  if (Number.isInteger(tick) && tick > 0 && tick < 1e8) out.tick = new Date(tick * 60_000).toISOString();
  return out;
}

interface LooseSource {
  repo?: unknown;
  apiURL?: unknown;
  kind?: unknown;
  forge?: unknown;
}

/** The item's page on its forge, from the trigger's source: github, gitea, or a webhook naming its repo. */
export function itemUrl(triggerSpec: unknown, number: number): string | undefined {
  const source = (triggerSpec as { source?: Record<string, LooseSource | undefined> } | undefined)?.source;
  if (!source) return undefined;
  const forge = source.github ? 'github' : source.gitea ? 'gitea' : source.webhook?.forge;
  const s = source.github ?? source.gitea ?? source.webhook;
  if (typeof s?.repo !== 'string' || !/^[\w.-]+\/[\w.-]+$/.test(s.repo)) return undefined;
  const web = webBase(forge, typeof s.apiURL === 'string' ? s.apiURL : undefined);
  if (!web) return undefined;
  const path = s.kind === 'pullRequests' ? (forge === 'github' ? 'pull' : 'pulls') : 'issues';
  return `${web}/${s.repo}/${path}/${number}`;
}

/** The forge's web root from its API URL: api.github.com → github.com, HOST/api/v3 (GHES), HOST/api/v1 (Gitea). */
function webBase(forge: unknown, apiURL: string | undefined): string | undefined {
  let url: URL;
  try {
    url = new URL(apiURL ?? (forge === 'github' ? 'https://api.github.com' : ''));
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  if (url.hostname === 'api.github.com') return 'https://github.com';
  const path = url.pathname.replace(/\/+$/, '').replace(/\/api\/v[13]$/, '');
  return `${url.origin}${path}`;
}
