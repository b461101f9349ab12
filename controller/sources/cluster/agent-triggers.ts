// AgentTriggers on a cluster: an informer on the kind, status through the /status subresource (merge
// patch), tokens from the Secret key the spec names (read when a poll needs it, never cached in status or
// logs), tasks created through the one created-tasks port (AgentTasks with an ownerReference to the
// trigger), and whether they finished from the AgentTask informer. Passes run only while this replica leads.
import type { Logger } from 'pino';
import { GROUP, isTerminal, VERSION } from '../../api/agent-task.ts';
import type { Phase } from '../../api/agent-task.ts';
import { AgentTaskStatusSchema } from '../../api/agent-task-status.ts';
import type { AgentTriggerStatus } from '../../api/agent-trigger.ts';
import {
  AgentTriggerStatusSchema,
  TRIGGER_KIND,
  TRIGGER_PLURAL,
  triggerNameProblem,
  validateTriggerSpec,
} from '../../api/agent-trigger.ts';
import { systemClock } from '../../core/clock.ts';
import type { Informer } from '../../kube/informer.ts';
import { objectKey } from '../../kube/informer.ts';
import { isStatus } from '../../kube/kube-client.ts';
import type { KubeClient } from '../../kube/kube-client.ts';
import type { CustomObject } from '../../kube/objects.ts';
import type { TriggerCounters } from '../../metrics/trigger-metrics.ts';
import { TriggerTimers } from '../triggers/local-triggers.ts';
import { PhaseWakes } from '../triggers/phase-wakes.ts';
import { requestClusterResume } from './resume-annotations.ts';
import type { TriggerHookOptions } from '../triggers/trigger-hooks.ts';
import type { RunnableTrigger, TriggerStatusStore } from '../triggers/trigger-runner.ts';
import { TriggerRunner } from '../triggers/trigger-runner.ts';
import { KubeCreatedTasks } from './created-tasks.ts';

export function triggersPath(namespace?: string): string {
  return namespace
    ? `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${TRIGGER_PLURAL}`
    : `/apis/${GROUP}/${VERSION}/${TRIGGER_PLURAL}`;
}

class KubeTriggerStatus implements TriggerStatusStore {
  /** What this controller wrote last: the informer may not have seen it yet. */
  private readonly written = new Map<string, AgentTriggerStatus>();

  private readonly triggers: Informer<CustomObject>;
  private readonly client: KubeClient;

  constructor(triggers: Informer<CustomObject>, client: KubeClient) {
    this.triggers = triggers;
    this.client = client;
  }

  read(key: string): AgentTriggerStatus | undefined {
    const mine = this.written.get(key);
    if (mine) return mine;
    const parsed = AgentTriggerStatusSchema.safeParse(this.triggers.get(key)?.status ?? {});
    return parsed.success ? parsed.data : undefined;
  }

  async write(key: string, status: AgentTriggerStatus): Promise<void> {
    const before = this.read(key);
    this.written.set(key, status);
    const [namespace, name] = key.split('/');
    // Cleared fields must go: a merge patch keeps what it does not name (a deleted task's entry too).
    const body = {
      status: {
        lastError: null,
        rateLimitedUntil: null,
        ...status,
        reported: withNulls(before?.reported, status.reported),
        pullRequests: withNulls(before?.pullRequests, status.pullRequests),
      },
    };
    try {
      await this.client.mergePatch(`${triggersPath(namespace)}/${name}/status`, body);
    } catch (err) {
      if (!isStatus(err, 404)) throw err; // deleted meanwhile
    }
  }
}

/** `now` with a null for each key `before` had: the merge patch that removes them. */
function withNulls<T>(before: Record<string, T> | undefined, now: Record<string, T> | undefined) {
  if (!before && !now) return undefined;
  const out: Record<string, T | null> = { ...now };
  for (const k of Object.keys(before ?? {})) if (!(k in out)) out[k] = null;
  return out;
}

export class ClusterTriggers {
  private readonly timers: TriggerTimers;
  private readonly runner: TriggerRunner;
  private readonly counters: TriggerCounters | undefined;
  private readonly triggers: Informer<CustomObject>;
  private readonly client: KubeClient;
  private readonly log: Logger;
  private leading = false;

  constructor(opts: {
    triggers: Informer<CustomObject>;
    tasks: Informer<CustomObject>;
    client: KubeClient;
    log: Logger;
    counters?: TriggerCounters;
  }) {
    this.triggers = opts.triggers;
    this.client = opts.client;
    this.log = opts.log;
    this.counters = opts.counters;
    const runner = new TriggerRunner({
      created: new KubeCreatedTasks(opts.client),
      finished: (namespace, name) => {
        const status = opts.tasks.get(`${namespace}/${name}`)?.status as { phase?: Phase } | undefined;
        return isTerminal(status?.phase);
      },
      status: new KubeTriggerStatus(opts.triggers, opts.client),
      taskStatus: (namespace, name) => {
        const parsed = AgentTaskStatusSchema.safeParse(opts.tasks.get(`${namespace}/${name}`)?.status ?? {});
        return parsed.success ? parsed.data : undefined;
      },
      // The merge patch `episodic resume --kubeconfig` makes: the resume annotations, nothing else.
      requestResume: (namespace, name, request) => requestClusterResume(opts.client, namespace, name, request),
      clock: systemClock,
      secret: (source, namespace) => this.secret(source.tokenSecretRef, namespace),
      counters: opts.counters,
      logger: opts.log,
    });
    this.runner = runner;
    this.timers = new TriggerTimers(runner, systemClock);
    const changed = () => this.leading && this.timers.set(this.runnable());
    opts.triggers.on({ add: changed, update: changed, delete: changed });
    // A reporting trigger's comment follows its tasks' phases.
    const wakes = new PhaseWakes(this.timers);
    const seen = (obj: CustomObject) => {
      const { namespace = 'default', name, labels } = obj.metadata;
      if (this.leading) wakes.seen(namespace, name, labels, (obj.status as { phase?: string } | undefined)?.phase);
    };
    opts.tasks.on({
      add: seen,
      update: (_old, obj) => seen(obj),
      delete: (obj) => wakes.forget(obj.metadata.namespace ?? 'default', obj.metadata.name),
    });
  }

  /** This replica leads: passes start (each trigger at once, then on its own timer). */
  start(): void {
    this.leading = true;
    this.timers.set(this.runnable());
  }

  stop(): void {
    this.leading = false;
    this.timers.stop();
  }

  /** What POST /hooks/NAMESPACE/TRIGGER needs (the same handlers as local mode): secrets from Secrets. */
  hookOptions(): TriggerHookOptions {
    return {
      trigger: (key) => this.timers.trigger(key),
      wake: (key) => this.timers.wake(key),
      runner: this.runner,
      secret: (source, namespace) => this.secret(source.tokenSecretRef, namespace),
      counters: this.counters,
      leading: () => this.leading,
      log: this.log,
    };
  }

  private runnable(): RunnableTrigger[] {
    const out: RunnableTrigger[] = [];
    for (const obj of this.triggers.list()) {
      const { name, namespace = 'default', uid } = obj.metadata;
      const spec = validateTriggerSpec(obj.spec);
      const problem = triggerNameProblem(name);
      if (!spec.ok || problem) {
        this.log.warn({ trigger: objectKey(obj), errors: spec.ok ? [problem] : spec.errors }, 'invalid AgentTrigger');
        continue;
      }
      out.push({
        key: objectKey(obj),
        namespace,
        name,
        spec: spec.spec,
        owner: { kind: TRIGGER_KIND, namespace, name, uid },
      });
    }
    return out;
  }

  private secret(ref: { name: string; key: string } | undefined, namespace: string): Promise<string | undefined> {
    return triggerSecret(this.client, ref, namespace);
  }
}

/** The token of a Secret key in the trigger's namespace; undefined when none is named. */
export async function triggerSecret(
  client: KubeClient,
  ref: { name: string; key: string } | undefined,
  namespace: string,
): Promise<string | undefined> {
  if (!ref) return undefined;
  let secret: { data?: Record<string, string> };
  try {
    secret = await client.get(`/api/v1/namespaces/${namespace}/secrets/${ref.name}`, undefined, 'work');
  } catch (err) {
    // Only the status: a Secret's content never reaches a message.
    const code = (err as { status?: number }).status;
    throw new Error(`cannot read Secret ${namespace}/${ref.name}${code ? ` (HTTP ${code})` : ''}`);
  }
  const value = secret.data?.[ref.key];
  if (value === undefined) throw new Error(`Secret ${namespace}/${ref.name} has no key ${ref.key}`);
  return Buffer.from(value, 'base64').toString('utf8').trim();
}
