// On a cluster the controller (the leader) serves the model gateway: an episode of a task with
// spec.agent.credentials gets a token of its own and the gateway's Service URL in its pod's env, never a
// Secret reference or a key. The controller reads the AgentCredentials and its Secret itself when the episode
// starts; the pod carries only the token's SHA-256 (an annotation), so a restarted controller re-grants the
// running pods' tokens instead of failing them. A token dies when its pod ends or is deleted.
import { sleepOn, systemClock } from '../../core/clock.ts';
import type { LiveSpend } from '../../reconciler/spend-cap.ts';
import type { Clock } from '../../core/clock.ts';
import type { Logger } from 'pino';
import {
  CREDENTIALS_KIND,
  CREDENTIALS_PLURAL,
  upstreamOf,
  validateCredentialsSpec,
} from '../../api/agent-credentials.ts';
import type { AgentCredentialsSpec } from '../../api/agent-credentials.ts';
import { GROUP, VERSION } from '../../api/agent-task.ts';
import { POD_CODEX_HOME } from '../../api/episode-config.ts';
import type { GatewayMetered } from '../../api/episode-result.ts';
import { agentGatewayEnv } from '../../gateway/agent-env.ts';
import type { CredentialPool } from '../../gateway/credential-pool.ts';
import { CredentialPools } from '../../gateway/credential-pools.ts';
import { SecretCredentialValues } from '../../gateway/credential-values.ts';
import type { CredentialValues } from '../../gateway/credential-values.ts';
import { startGateway, taskPrefix } from '../../gateway/gateway.ts';
import type { GrantRequest } from '../../gateway/grants.ts';
import type { Gateway } from '../../gateway/gateway.ts';
import type { GrantSpec } from '../../gateway/grants.ts';
import { tokenHash } from '../../gateway/grants.ts';
import { isStatus } from '../../kube/kube-client.ts';
import type { KubeClient } from '../../kube/kube-client.ts';
import type { GatewayMetrics } from '../../metrics/gateway-metrics.ts';
import { parseAddress } from '../../metrics/server.ts';
import { KubeCredentialsStatus } from '../../sinks/cluster/credentials-status.ts';

/** The pod's annotation holding its token's SHA-256 (never the token): what a restart re-grants by. */
export const GATEWAY_TOKEN_ANNOTATION = 'episodic.dev/gateway-token-sha256';

const NOT_LISTENING = 'spec.agent.credentials: the model gateway is not listening (see the controller log)';

export interface ClusterGatewayOptions {
  client: KubeClient;
  log: Logger;
  /** HOST:PORT to listen on; a bare port is 127.0.0.1 (0.0.0.0 only when the chart puts a Service in front). */
  listen: string;
  /** The base URL episode pods reach the gateway at (the chart's Service); default: the listener's own URL. */
  url?: string;
  /** Tests: where the values come from (default: the Secrets the credentials name). */
  values?: CredentialValues;
  /** The clock of pauses, per-minute limits and budget windows (tests inject one). */
  clock?: Clock;
  metrics?: GatewayMetrics;
}

export type ClusterGrant =
  | { ok: true; env: Record<string, string>; tokenSha256: string }
  | { ok: false; message: string };

export class ClusterGatewayBinding {
  private gateway?: Gateway;
  private readonly opts: ClusterGatewayOptions;
  private readonly values: CredentialValues;
  private readonly clock: Clock;
  private readonly now: () => Date;
  /** The pools, their status kept in AgentCredentials.status on the apiserver (the same code as locally). */
  readonly pools: CredentialPools;
  private readonly poolNames = new WeakMap<CredentialPool, { namespace: string; name: string }>();

  constructor(opts: ClusterGatewayOptions) {
    this.opts = opts;
    this.values = opts.values ?? new SecretCredentialValues(opts.client);
    const clock = (this.clock = opts.clock ?? systemClock);
    this.now = () => clock.now();
    this.pools = new CredentialPools({
      store: new KubeCredentialsStatus(opts.client, opts.log),
      now: this.now,
      metrics: opts.metrics,
      onWriteError: (key, err) =>
        opts.log.warn({ credentials: key, err: String(err) }, 'AgentCredentials status write failed; will retry'),
    });
  }

  /** Every credential of the AgentCredentials is at a usage limit: the earliest reset (the reconciler's fact). */
  async pausedUntil(namespace: string, name: string): Promise<Date | undefined> {
    const loaded = this.pools.loadedPool(namespace, name);
    if (loaded && !loaded.pausedUntil(this.now())) return undefined;
    // Paused (or not made yet): its members as the spec has them now, so a credential added frees it at once.
    const found = await this.credentialsSpec(namespace, name);
    if (!found.ok) return undefined; // the episode's start says why
    const pool = await this.pools.pool(namespace, name, membersOf(found.spec));
    return pool.pausedUntil(this.now());
  }

  /** A usage limit began or ended on a pool: its tasks are looked at again. */
  get pauses() {
    return this.pools.pauses;
  }

  /** The pool's counters changed (a request metered, an episode ended): written coalesced. */
  private touched(pool: CredentialPool | undefined): void {
    const at = pool && this.poolNames.get(pool);
    if (at) this.pools.changed(at.namespace, at.name);
  }

  /** Listening: the leader starts it before it reconciles, so a pod it starts can reach it. */
  async start(): Promise<void> {
    if (this.gateway) return;
    const listen = /^:?\d+$/.test(this.opts.listen.trim())
      ? `127.0.0.1:${this.opts.listen.trim().replace(/^:/, '')}`
      : this.opts.listen;
    const { host, port } = parseAddress(listen);
    const metrics = this.opts.metrics;
    this.gateway = await startGateway({
      host,
      port,
      log: this.opts.log,
      now: this.now,
      sleep: (ms, signal) => sleepOn(this.clock, ms, signal),
      onAnswer: metrics && ((grant, credential, status) => metrics.answered(grant, credential, status)),
      onUsage: (grant, usage, cost, _status, credential) => {
        metrics?.used(grant, credential, usage, cost);
        this.touched(grant.pool);
      },
    });
    this.opts.log.info({ gateway: this.gateway.url, podsUse: this.url }, 'model gateway listening');
  }

  /** What pods are given (the Service's URL), without a task's prefix. */
  get url(): string {
    return (this.opts.url ?? this.gateway?.url ?? '').replace(/\/+$/, '');
  }

  /** A new token for the episode about to start, and the env its pod gets. */
  async open(req: GrantRequest): Promise<ClusterGrant> {
    if (!this.gateway) return { ok: false, message: NOT_LISTENING };
    const spec = await this.grantSpec(req);
    if (!spec.ok) return spec;
    const gateway = this.running();
    const token = gateway.grants.issue(spec.grant);
    const url = `${this.url}${taskPrefix(req.namespace, req.task)}`;
    // Codex's config.toml is written by the pod's runner into its home emptyDir (episode-pod.ts), not mounted
    // from a ConfigMap: no object per episode to create and clean up, and codex 0.169 writes its own state
    // (its sessions and logs) into CODEX_HOME, which a ConfigMap volume would make read-only.
    const env = agentGatewayEnv(spec.grant.provider, url, token, POD_CODEX_HOME);
    return { ok: true, env, tokenSha256: tokenHash(token) };
  }

  /** After a restart: the running pod's token (known by its hash) is valid again, its leash from now. */
  async restore(req: GrantRequest, tokenSha256: string): Promise<{ ok: true } | { ok: false; message: string }> {
    if (!this.gateway) return { ok: false, message: NOT_LISTENING };
    if (this.running().grants.hasHash(tokenSha256)) return { ok: true };
    const spec = await this.grantSpec(req);
    if (!spec.ok) return spec;
    this.running().grants.restore(tokenSha256, spec.grant);
    return { ok: true };
  }

  /** What the gateway metered so far on the task's running episode (the budgets count it before its record). */
  liveSpend(namespace: string, task: string): LiveSpend | undefined {
    return this.gateway?.grants.liveSpend(namespace, task);
  }

  has(tokenSha256: string): boolean {
    return this.gateway?.grants.hasHash(tokenSha256) ?? false;
  }

  /** The episode's pod ended: its token is dead from now on; what was metered on it. */
  revoke(tokenSha256: string): GatewayMetered | undefined {
    const m = this.gateway?.grants.revokeHash(tokenSha256);
    if (!m) return undefined;
    return { requests: m.requests, tokens: m.tokens, costUSD: m.costUSD, ...(m.refused ? { refused: m.refused } : {}) };
  }

  async close(): Promise<void> {
    const gateway = this.gateway;
    this.gateway = undefined;
    await gateway?.close();
    await this.pools.flush().catch(() => undefined);
  }

  private running(): Gateway {
    if (!this.gateway) throw new Error('the model gateway is not started');
    return this.gateway;
  }

  /** The AgentCredentials (read from the API server now) and its credential's value (from its Secret). */
  private async grantSpec(req: GrantRequest): Promise<{ ok: true; grant: GrantSpec } | { ok: false; message: string }> {
    const field = `spec.agent.credentials: ${req.credentials}`;
    const found = await this.credentialsSpec(req.namespace, req.credentials);
    if (!found.ok) return { ok: false, message: `${field}: ${found.message}` };
    const label = `${CREDENTIALS_KIND} ${req.namespace}/${req.credentials}`;
    // Every credential whose Secret can be read; the pool's governor chooses among them per request.
    const usable: Array<{ name: string; value: string }> = [];
    const failed: Array<{ name: string; message: string }> = [];
    for (const [i, credential] of found.spec.credentials.entries()) {
      const value = await this.values.valueOf(req.namespace, credential, `${label}: spec.credentials[${i}]`);
      if (value.ok) usable.push({ name: credential.name, value: value.value });
      else failed.push({ name: credential.name, message: value.message });
    }
    if (usable.length === 0) return { ok: false, message: failed.map((f) => f.message).join('; ') };
    const pool = await this.pools.pool(req.namespace, req.credentials, membersOf(found.spec));
    this.poolNames.set(pool, { namespace: req.namespace, name: req.credentials });
    this.pools.setMissing(
      req.namespace,
      req.credentials,
      failed.map((f) => f.name),
    );
    return {
      ok: true,
      grant: {
        namespace: req.namespace,
        task: req.task,
        episode: req.episode,
        provider: found.spec.provider,
        upstream: upstreamOf(found.spec),
        credentials: usable,
        pool,
        pricing: found.spec.pricing,
        leash: req.leash,
        onRefused: req.onRefused,
      },
    };
  }

  private async credentialsSpec(
    namespace: string,
    name: string,
  ): Promise<{ ok: true; spec: AgentCredentialsSpec } | { ok: false; message: string }> {
    const path = `/apis/${GROUP}/${VERSION}/namespaces/${encodeURIComponent(namespace)}/${CREDENTIALS_PLURAL}/${encodeURIComponent(name)}`;
    let object: { spec?: unknown };
    try {
      object = await this.opts.client.get<{ spec?: unknown }>(path);
    } catch (err) {
      if (isStatus(err, 404))
        return { ok: false, message: `no ${CREDENTIALS_KIND} of that name in namespace ${namespace}` };
      if (isStatus(err, 403))
        return {
          ok: false,
          message: `the controller may not read ${CREDENTIALS_KIND} in namespace ${namespace} (chart: gateway.enabled)`,
        };
      throw err;
    }
    const valid = validateCredentialsSpec(object.spec);
    return valid.ok ? valid : { ok: false, message: `the ${CREDENTIALS_KIND} is invalid: ${valid.errors.join('; ')}` };
  }
}

const membersOf = (spec: AgentCredentialsSpec) => spec.credentials.map((c) => ({ name: c.name, limits: c.limits }));
