// POST /hooks/NAMESPACE/TRIGGER for both modes: which trigger a delivery is for, its secret (local: the
// environment variable; cluster: the Secret key), and what a verified delivery does. A `source.webhook`
// trigger gets the delivered item judged like a poll result (TriggerRunner.itemsArrived, reconcileTrigger's
// delivery pass); a forge source with `webhook:` only has its poll woken, so the poll reads the forge and a
// forged payload describes nothing.
// Verifying, replay and the HTTP answers are forge/hook-server.ts's.
import type { Logger } from 'pino';
import type { Permission, WebhookSource } from '../../api/agent-trigger.ts';
import { type HookDelivery, type HookServer, type HookTarget, startHookServer } from '../../forge/hook-server.ts';
import type { ForgeKind } from '../../api/forge-item.ts';
import { parseAddress } from '../../metrics/server.ts';
import type { TriggerCounters } from '../../metrics/trigger-metrics.ts';
import { commenterToAsk, otherRepository } from '../../reconciler/trigger-item-pass.ts';
import type { RunnableTrigger, TriggerDeps, TriggerRunner } from './trigger-runner.ts';

export interface TriggerHookOptions {
  /** The triggers as last set (local: the spec dir; cluster: the informer, while leading). */
  trigger(key: string): RunnableTrigger | undefined;
  /** A forge source's webhook, or a reporting webhook source's delivery: its next pass is now. */
  wake(key: string): void;
  runner: TriggerRunner;
  secret: TriggerDeps['secret'];
  counters?: TriggerCounters;
  /** Cluster: only the leader acts on deliveries; another replica answers 500 so the forge redelivers. */
  leading?(): boolean;
  log: Logger;
}

interface HookConfig {
  forge: ForgeKind;
  secretEnv?: string;
  secretRef?: { name: string; key: string };
}

/** The trigger's webhook (a webhook source, or a forge source's `webhook:`), or undefined when it has none. */
function hookOf(trigger: RunnableTrigger | undefined): HookConfig | undefined {
  const source = trigger?.spec.source;
  if (source?.webhook) return source.webhook;
  if (source?.gitea?.webhook) return { forge: 'gitea', ...source.gitea.webhook };
  if (source?.github?.webhook) return { forge: 'github', ...source.github.webhook };
  return undefined;
}

export function triggerHookHandlers(opts: TriggerHookOptions) {
  const resolve = async (namespace: string, name: string): Promise<HookTarget | undefined> => {
    if (opts.leading && !opts.leading()) throw new Error('not the leader: deliver again later');
    const hook = hookOf(opts.trigger(`${namespace}/${name}`));
    if (!hook) return undefined;
    const secret = await opts.secret({ tokenEnv: hook.secretEnv, tokenSecretRef: hook.secretRef }, namespace);
    if (!secret) opts.log.warn({ trigger: `${namespace}/${name}` }, 'the webhook secret is not set: deliveries fail');
    return { forge: hook.forge, secret: secret ?? '' };
  };
  const onItem = async (d: HookDelivery): Promise<void> => {
    const key = `${d.namespace}/${d.trigger}`;
    const trigger = opts.trigger(key);
    if (!trigger) throw new Error('the trigger is gone');
    const source = trigger.spec.source.webhook;
    if (!source) return opts.wake(key);
    if (otherRepository(source, d.repo)) {
      opts.log.info({ trigger: key, delivery: d.deliveryId }, 'webhook delivery for another repository: ignored');
      return;
    }
    const commenter = commenterToAsk(source, d.comment);
    const permissions = new Map<string, Permission | undefined>();
    if (commenter) permissions.set(commenter, await commenterPermission(source, commenter, trigger.namespace, opts));
    const seen = [{ item: d.item, comments: d.comment ? [d.comment] : [] }];
    await opts.runner.itemsArrived(trigger, seen, permissions);
    // spec.report: the trigger's pass reports the new task now, as a poll that created it would.
    if (trigger.spec.report) opts.wake(key);
  };
  return { resolve, onItem };
}

/** The commenter's permission, asked of the forge only for a command comment that may trigger (commenterToAsk). */
async function commenterPermission(
  source: WebhookSource,
  author: string,
  namespace: string,
  opts: TriggerHookOptions,
): Promise<Permission | undefined> {
  const token = await opts.secret(source, namespace);
  if (!token) throw new Error('the token for permission checks is not set');
  // The forge clients (Octokit) load only when a command needs them: hooks start fast.
  const { openForge } = await import('../../forge/open-forge.ts');
  const forge = openForge({
    forge: source.forge,
    repo: source.repo as string,
    apiURL: source.apiURL,
    token,
    metrics: opts.counters,
  });
  return forge.permission(author);
}

/** "PORT" or ":PORT" binds the loopback; deliveries from elsewhere need the host said (0.0.0.0:PORT). */
export function hookAddress(address: string): { host: string; port: number } {
  const { host, port } = parseAddress(address);
  return { host: /^:?\d+$/.test(address.trim()) ? '127.0.0.1' : host, port };
}

export async function serveTriggerHooks(address: string, opts: TriggerHookOptions): Promise<HookServer> {
  const server = await startHookServer({
    ...hookAddress(address),
    ...triggerHookHandlers(opts),
    onOutcome: (o) => {
      opts.counters?.webhookDelivery(o.forge ?? 'unknown', o.result);
      const fields = {
        trigger: `${o.namespace}/${o.trigger}`,
        status: o.status,
        reason: o.reason,
        delivery: o.deliveryId,
      };
      if (o.status >= 400) opts.log.warn(fields, 'webhook delivery refused');
      else opts.log.info(fields, 'webhook delivery');
    },
  });
  opts.log.info({ url: `${server.url}/hooks/NAMESPACE/TRIGGER` }, 'serving webhooks');
  return server;
}
