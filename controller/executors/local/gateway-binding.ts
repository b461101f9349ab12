// Locally, an episode of a task with spec.agent.credentials runs behind the model gateway: the gateway is
// started on 127.0.0.1 (a random port) when the first such episode starts, the credential's value is read
// from the controller's environment (credentials[].env; gateway/credential-values.ts), a pool's pauses are kept under the
// state directory, and the agent gets a token of its own and the
// gateway's URL instead of any provider key of the controller's.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { upstreamOf } from '../../api/agent-credentials.ts';
import { sleepOn, systemClock } from '../../core/clock.ts';
import type { Clock } from '../../core/clock.ts';
import type { CredentialPool } from '../../gateway/credential-pool.ts';
import { CredentialPools } from '../../gateway/credential-pools.ts';
import { envCredentialValue } from '../../gateway/credential-values.ts';
import type { GatewayMetrics } from '../../metrics/gateway-metrics.ts';
import { LocalCredentialsStatus } from '../../sinks/local/credentials-status.ts';
import type { GatewayMetered } from '../../api/episode-result.ts';
import { agentGatewayEnv, PROVIDER_KEY_VARS } from '../../gateway/agent-env.ts';
import { codexGatewayConfig } from '../../gateway/codex-config.ts';
import { startGateway } from '../../gateway/gateway.ts';
import type { GrantRequest } from '../../gateway/grants.ts';
import type { Gateway } from '../../gateway/gateway.ts';
import type { LiveSpend } from '../../reconciler/spend-cap.ts';
import type { SpecCredentials } from '../../sources/local/credentials-files.ts';
import { writeFileAtomicSync } from '../../util/atomic-write.ts';
import { gatewayCodexHomePath } from '../../util/state-layout.ts';

export interface OpenedGrant {
  ok: true;
  /** Added to the agent's environment. */
  env: Record<string, string>;
  /** Not inherited from the controller's environment. */
  unset: string[];
  /**
   * The files that name the gateway's URL (codex's config.toml), written from `seen`: the agent's environment as
   * it will run, whose base URL is the sandbox's relay when the episode is sandboxed.
   */
  writeAgentFiles(seen: Readonly<Record<string, string>>): void;
  /** The episode ended: the token dies; what was metered on it. */
  close(): GatewayMetered;
}

export type GrantOpening = OpenedGrant | { ok: false; message: string };

export interface LocalGrantRequest extends GrantRequest {
  /** spec.agent.env's values: where the user's own CODEX_HOME is (an openai provider's episode). */
  agentEnv?: Readonly<Record<string, string>>;
}

export interface LocalGatewayOptions {
  /** The AgentCredentials documents of the spec directory as last loaded. */
  lookup: () => Iterable<SpecCredentials>;
  log: Logger;
  /** Where the pools' status (pauses, totals) is kept across restarts. */
  stateDir: string;
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  metrics?: GatewayMetrics;
}

export class LocalGatewayBinding {
  private gateway?: Promise<Gateway>;
  /** The gateway once listening: what it metered is read synchronously, between two passes. */
  private listening?: Gateway;
  private readonly opts: LocalGatewayOptions;
  private readonly env: NodeJS.ProcessEnv;
  private readonly clock: Clock;
  private readonly now: () => Date;
  /** One pool per AgentCredentials, made when it is first used or asked about; status in the state directory. */
  private readonly pools: CredentialPools;

  constructor(opts: LocalGatewayOptions) {
    this.opts = opts;
    this.env = opts.env ?? process.env;
    const clock = (this.clock = opts.clock ?? systemClock);
    this.now = () => clock.now();
    this.pools = new CredentialPools({
      store: new LocalCredentialsStatus(opts.stateDir, opts.log),
      now: this.now,
      metrics: opts.metrics,
    });
  }

  async open(req: LocalGrantRequest): Promise<GrantOpening> {
    const all = [...this.opts.lookup()];
    const doc = all.find((c) => c.namespace === req.namespace && c.name === req.credentials);
    const field = `spec.agent.credentials: ${req.credentials}`;
    if (!doc) return { ok: false, message: `${field}: no AgentCredentials of that name in namespace ${req.namespace}` };
    if (!doc.spec)
      return { ok: false, message: `${field}: the AgentCredentials is invalid (${doc.errors[0] ?? 'see validate'})` };
    const usable = doc.spec.credentials.flatMap((c) => {
      const value = envCredentialValue(c, this.env);
      return value ? [{ name: c.name, value }] : [];
    });
    if (usable.length === 0) {
      const vars = doc.spec.credentials.map((c, i) => `spec.credentials[${i}].env: ${c.env}`).join(', ');
      return {
        ok: false,
        message: `${doc.file}: AgentCredentials ${doc.key}: ${vars}: not set in the controller's environment`,
      };
    }
    const pool = await this.poolOf(doc);
    const gateway = await (this.gateway ??= this.start());
    const token = gateway.grants.issue({
      namespace: req.namespace,
      task: req.task,
      episode: req.episode,
      provider: doc.spec.provider,
      upstream: upstreamOf(doc.spec),
      credentials: usable,
      pool,
      pricing: doc.spec.pricing,
      leash: req.leash,
      onRefused: req.onRefused,
    });
    // Neither the standard provider variables nor any credential variable of any AgentCredentials is inherited.
    const credentialVars = all.flatMap((c) =>
      (c.spec?.credentials ?? []).map((x) => x.env).filter((e) => e !== undefined),
    );
    const codexHome =
      doc.spec.provider === 'openai' ? gatewayCodexHomePath(this.opts.stateDir, req.namespace, req.task) : undefined;
    const env = agentGatewayEnv(doc.spec.provider, gateway.baseUrl(req.namespace, req.task), token, codexHome);
    return {
      ok: true,
      env,
      unset: [...new Set([...PROVIDER_KEY_VARS, ...credentialVars])],
      writeAgentFiles: (seen) => {
        if (codexHome) this.writeCodexHome(req, codexHome, seen.OPENAI_BASE_URL ?? env.OPENAI_BASE_URL);
      },
      close: () => {
        const m = gateway.grants.revoke(token);
        this.persist(doc);
        return {
          requests: m?.requests ?? 0,
          tokens: m?.tokens ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
          costUSD: m?.costUSD ?? 0,
          ...(m?.refused ? { refused: m.refused } : {}),
        };
      },
    };
  }

  /** What the gateway metered so far on the task's running episode (the budgets count it before its record). */
  liveSpend(namespace: string, task: string): LiveSpend | undefined {
    return this.listening?.grants.liveSpend(namespace, task);
  }

  /** Every credential of the task's AgentCredentials is at a usage limit: the earliest reset (the reconciler's fact). */
  async pausedUntil(namespace: string, credentials: string): Promise<Date | undefined> {
    const doc = [...this.opts.lookup()].find((c) => c.namespace === namespace && c.name === credentials);
    return doc?.spec ? (await this.poolOf(doc)).pausedUntil(this.now()) : undefined;
  }

  /** A pool's pauses changed: the tasks using it are looked at again (the controller loop subscribes). */
  get pauses() {
    return this.pools.pauses;
  }

  /** The pool (gateway/credential-pools.ts, as on a cluster), its Missing credentials those without a value. */
  private async poolOf(doc: SpecCredentials): Promise<CredentialPool> {
    const members = (doc.spec?.credentials ?? []).map((c) => ({ name: c.name, limits: c.limits }));
    const pool = await this.pools.pool(doc.namespace, doc.name, members);
    const missing = (doc.spec?.credentials ?? []).filter((c) => !envCredentialValue(c, this.env)).map((c) => c.name);
    this.pools.setMissing(doc.namespace, doc.name, missing);
    return pool;
  }

  /** The pool's totals changed (an episode ended): its status is written (coalesced). */
  private persist(doc: SpecCredentials): void {
    this.pools.changed(doc.namespace, doc.name);
  }

  /** The task's CODEX_HOME: the user's config.toml with the gateway as its provider (codex-config.ts). */
  private writeCodexHome(req: LocalGrantRequest, home: string, baseUrl: string): void {
    const env = { ...this.env, ...req.agentEnv };
    const own = env.CODEX_HOME ?? (env.HOME ? join(env.HOME, '.codex') : undefined);
    const userConfig = own && own !== home ? join(own, 'config.toml') : undefined;
    const user = userConfig && existsSync(userConfig) ? readFileSync(userConfig, 'utf8') : '';
    mkdirSync(home, { recursive: true, mode: 0o700 });
    writeFileAtomicSync(join(home, 'config.toml'), codexGatewayConfig(baseUrl, user));
  }

  private async start(): Promise<Gateway> {
    const metrics = this.opts.metrics;
    const gateway = await startGateway({
      host: '127.0.0.1',
      log: this.opts.log,
      now: this.now,
      sleep: (ms, signal) => sleepOn(this.clock, ms, signal),
      onAnswer: metrics && ((grant, credential, status) => metrics.answered(grant, credential, status)),
      onUsage: metrics && ((grant, usage, cost, _status, credential) => metrics.used(grant, credential, usage, cost)),
    });
    this.opts.log.info({ gateway: gateway.url }, 'model gateway listening');
    this.listening = gateway;
    return gateway;
  }

  async close(): Promise<void> {
    const gateway = this.gateway;
    this.gateway = undefined;
    this.listening = undefined;
    await (await gateway)?.close();
    await this.pools.flush();
  }
}
