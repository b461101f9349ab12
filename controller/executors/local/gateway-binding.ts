// Locally, an episode of a task with spec.agent.credentials runs behind the model gateway: the gateway is
// started on 127.0.0.1 (a random port) when the first such episode starts, the credential's value is read
// from the controller's environment (credentials[].env), and the agent gets a token of its own and the
// gateway's URL instead of any provider key of the controller's.
import type { Logger } from 'pino';
import { upstreamOf } from '../../api/agent-credentials.ts';
import type { EpisodeLeash } from '../../api/episode-leash.ts';
import type { GatewayMetered } from '../../api/episode-result.ts';
import { agentGatewayEnv, PROVIDER_KEY_VARS } from '../../gateway/agent-env.ts';
import { EnvCredentialValues } from '../../gateway/credential-values.ts';
import type { CredentialValues } from '../../gateway/credential-values.ts';
import { startGateway } from '../../gateway/gateway.ts';
import type { Gateway } from '../../gateway/gateway.ts';
import type { SpecCredentials } from '../../sources/local/credentials-files.ts';

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
}

export class LocalGatewayBinding {
  private gateway?: Promise<Gateway>;
  private readonly lookup: () => Iterable<SpecCredentials>;
  private readonly log: Logger;
  private readonly values: CredentialValues;

  /** `lookup`: the AgentCredentials documents of the spec directory as last loaded. */
  constructor(opts: { lookup: () => Iterable<SpecCredentials>; log: Logger; env?: NodeJS.ProcessEnv }) {
    this.lookup = opts.lookup;
    this.log = opts.log;
    this.values = new EnvCredentialValues(opts.env);
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
    const found = await this.values.valueOf(
      req.namespace,
      credential,
      `${doc.file}: AgentCredentials ${doc.key}: spec.credentials[0]`,
    );
    if (!found.ok) return found;
    const { value } = found;
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
    return {
      ok: true,
      env: agentGatewayEnv(doc.spec.provider, gateway.baseUrl(req.namespace, req.task), token),
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
