// Locally, an episode of a task with spec.agent.credentials runs behind the model gateway: the gateway is
// started on 127.0.0.1 (a random port) when the first such episode starts, the credential's value is read
// from the controller's environment (credentials[].env), and the agent gets a token of its own and the
// gateway's URL instead of any provider key of the controller's.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { upstreamOf } from '../../api/agent-credentials.ts';
import type { EpisodeLeash } from '../../api/episode-leash.ts';
import type { GatewayMetered } from '../../api/episode-result.ts';
import { agentGatewayEnv, PROVIDER_KEY_VARS } from '../../gateway/agent-env.ts';
import { codexGatewayConfig } from '../../gateway/codex-config.ts';
import { startGateway } from '../../gateway/gateway.ts';
import type { Gateway } from '../../gateway/gateway.ts';
import type { SpecCredentials } from '../../sources/local/credentials-files.ts';
import { writeFileAtomicSync } from '../../util/atomic-write.ts';
import { gatewayCodexHomePath } from '../../util/state-layout.ts';

export interface OpenedGrant {
  ok: true;
  /** Added to the agent's environment. */
  env: Record<string, string>;
  /** Not inherited from the controller's environment. */
  unset: string[];
  /** The episode ended: the token dies; what was metered on it. */
  close(): GatewayMetered;
}

export type GrantOpening = OpenedGrant | { ok: false; message: string };

export interface GrantRequest {
  namespace: string;
  task: string;
  episode: number;
  /** spec.agent.credentials */
  credentials: string;
  leash: EpisodeLeash;
  onRefused: (message: string) => void;
  /** spec.agent.env's values: where the user's own CODEX_HOME is (an openai provider's episode). */
  agentEnv?: Readonly<Record<string, string>>;
}

export class LocalGatewayBinding {
  private gateway?: Promise<Gateway>;
  private readonly lookup: () => Iterable<SpecCredentials>;
  private readonly log: Logger;
  private readonly env: NodeJS.ProcessEnv;
  private readonly stateDir?: string;

  /** `lookup`: the AgentCredentials documents of the spec directory as last loaded. */
  constructor(opts: {
    lookup: () => Iterable<SpecCredentials>;
    log: Logger;
    env?: NodeJS.ProcessEnv;
    /** Where an openai task's CODEX_HOME is written (without it, codex is not pointed at the gateway). */
    stateDir?: string;
  }) {
    this.lookup = opts.lookup;
    this.log = opts.log;
    this.env = opts.env ?? process.env;
    this.stateDir = opts.stateDir;
  }

  async open(req: GrantRequest): Promise<GrantOpening> {
    const all = [...this.lookup()];
    const doc = all.find((c) => c.namespace === req.namespace && c.name === req.credentials);
    const field = `spec.agent.credentials: ${req.credentials}`;
    if (!doc) return { ok: false, message: `${field}: no AgentCredentials of that name in namespace ${req.namespace}` };
    if (!doc.spec)
      return { ok: false, message: `${field}: the AgentCredentials is invalid (${doc.errors[0] ?? 'see validate'})` };
    // Pools (several credentials) pick one per request later (issue 29 §3); for now the first is used.
    const credential = doc.spec.credentials[0];
    const value = credential?.env ? this.env[credential.env] : undefined;
    if (!credential || !value)
      return {
        ok: false,
        message: `${doc.file}: AgentCredentials ${doc.key}: spec.credentials[0].env: ${credential?.env} is not set in the controller's environment`,
      };
    const gateway = await (this.gateway ??= this.start());
    const token = gateway.grants.issue({
      namespace: req.namespace,
      task: req.task,
      episode: req.episode,
      provider: doc.spec.provider,
      upstream: upstreamOf(doc.spec),
      credential: { name: credential.name, value },
      pricing: doc.spec.pricing,
      leash: req.leash,
      onRefused: req.onRefused,
    });
    // Neither the standard provider variables nor any credential variable of any AgentCredentials is inherited.
    const credentialVars = all.flatMap((c) =>
      (c.spec?.credentials ?? []).map((x) => x.env).filter((e) => e !== undefined),
    );
    const base = gateway.baseUrl(req.namespace, req.task);
    const codexHome = doc.spec.provider === 'openai' ? this.writeCodexHome(req, `${base}/v1`) : undefined;
    return {
      ok: true,
      env: agentGatewayEnv(doc.spec.provider, base, token, codexHome),
      unset: [...new Set([...PROVIDER_KEY_VARS, ...credentialVars])],
      close: () => {
        const m = gateway.grants.revoke(token);
        return {
          requests: m?.requests ?? 0,
          tokens: m?.tokens ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
          costUSD: m?.costUSD ?? 0,
          ...(m?.refused ? { refused: m.refused } : {}),
        };
      },
    };
  }

  /** The task's CODEX_HOME: the user's config.toml with the gateway as its provider (codex-config.ts). */
  private writeCodexHome(req: GrantRequest, baseUrl: string): string | undefined {
    if (!this.stateDir) return undefined;
    const home = gatewayCodexHomePath(this.stateDir, req.namespace, req.task);
    const env = { ...this.env, ...req.agentEnv };
    const own = env.CODEX_HOME ?? (env.HOME ? join(env.HOME, '.codex') : undefined);
    const userConfig = own && own !== home ? join(own, 'config.toml') : undefined;
    const user = userConfig && existsSync(userConfig) ? readFileSync(userConfig, 'utf8') : '';
    mkdirSync(home, { recursive: true, mode: 0o700 });
    writeFileAtomicSync(join(home, 'config.toml'), codexGatewayConfig(baseUrl, user));
    return home;
  }

  private async start(): Promise<Gateway> {
    const gateway = await startGateway({ host: '127.0.0.1', log: this.log });
    this.log.info({ gateway: gateway.url }, 'model gateway listening');
    return gateway;
  }

  async close(): Promise<void> {
    const gateway = this.gateway;
    this.gateway = undefined;
    await (await gateway)?.close();
  }
}
