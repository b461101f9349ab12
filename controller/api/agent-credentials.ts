// The AgentCredentials contract (episodic.dev/v1alpha1): the model provider a task's agent talks to through the
// gateway, the upstream it is fixed to, the credentials the gateway holds for it (the agent never sees one), and
// what the provider's models cost. A task names it with spec.agent.credentials, or uses the one its namespace
// marks spec.default (reconciler/credentials-choice.ts). Like AgentTask, this zod
// schema is the one source of types, defaults, validation messages and the CRD.
import { z } from 'zod';
import { API_VERSION, MetadataSchema, PricingSchema } from './agent-task.ts';
import { describeIssues } from './validate.ts';

export const CREDENTIALS_KIND = 'AgentCredentials';
export const CREDENTIALS_PLURAL = 'agentcredentials';

/** spec.agent.credentials: "none" opts a task out of its namespace's default (no gateway); no AgentCredentials has this name. */
export const NO_CREDENTIALS = 'none';

export const PROVIDERS = ['anthropic', 'openai', 'gemini'] as const;
export type Provider = (typeof PROVIDERS)[number];

/** The provider's public API, used when spec.upstream is not given. */
export const DEFAULT_UPSTREAM: Record<Provider, string> = {
  anthropic: 'https://api.anthropic.com',
  openai: 'https://api.openai.com',
  gemini: 'https://generativelanguage.googleapis.com',
};

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const CredentialLimitsSchema = z
  .strictObject({
    requestsPerMinute: z.number().int().positive().optional(),
    tokensPerMinute: z.number().int().positive().optional(),
  })
  .describe('what the gateway sends on this credential at most');

export const CredentialSchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(63)
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a lowercase RFC 1123 label'),
    secretRef: z
      .strictObject({ name: z.string().min(1).max(253), key: z.string().min(1).max(253) })
      .optional()
      .describe('cluster mode: the Secret key the controller reads'),
    env: z
      .string()
      .regex(ENV_NAME, 'must be a valid environment variable name')
      .optional()
      .describe("local mode: the controller's environment variable holding the key (the agent never inherits it)"),
    limits: CredentialLimitsSchema.optional(),
  })
  .superRefine((c, ctx) => {
    if ((c.secretRef === undefined) === (c.env === undefined))
      ctx.addIssue({ code: 'custom', message: 'give exactly one of secretRef and env' });
  });

const upstreamUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
  .refine((u) => {
    const url = new URL(u);
    return !url.search && !url.hash && !url.username && !url.password;
  }, 'must have no query, fragment or user info')
  .describe("the API's base URL; a request chooses a path below it, never a host");

export const AgentCredentialsSpecSchema = z
  .strictObject({
    provider: z.enum(PROVIDERS),
    upstream: upstreamUrl.optional(),
    credentials: z.array(CredentialSchema).min(1).max(32),
    default: z
      .boolean()
      .default(false)
      .describe(
        'the namespace default: a task of the namespace without spec.agent.credentials uses this one (at most one default per namespace)',
      ),
    pricing: z
      .record(z.string().min(1).max(200), PricingSchema)
      .default({})
      .describe('USD per million tokens by model name; a key ending in "*" is a prefix, "*" alone any model'),
  })
  .superRefine((spec, ctx) => {
    const seen = new Set<string>();
    spec.credentials.forEach((c, i) => {
      if (seen.has(c.name))
        ctx.addIssue({ code: 'custom', path: ['credentials', i, 'name'], message: `duplicate name "${c.name}"` });
      seen.add(c.name);
    });
  });

export const CredentialStatusSchema = z.object({
  name: z.string(),
  state: z.enum(['Ready', 'Paused', 'Missing']),
  pausedUntil: z.string().optional(),
  requests: z.number().int().nonnegative().default(0),
  tokens: z.number().int().nonnegative().default(0),
  lastError: z.string().max(500).optional(),
});

export const AgentCredentialsStatusSchema = z.object({
  credentials: z.array(CredentialStatusSchema).default([]),
  message: z.string().optional(),
  updatedAt: z.string().optional(),
  observedGeneration: z.number().int().optional(),
});

export const AgentCredentialsSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(CREDENTIALS_KIND),
  metadata: MetadataSchema,
  spec: AgentCredentialsSpecSchema,
  status: AgentCredentialsStatusSchema.optional(),
});

export type AgentCredentialsSpec = z.infer<typeof AgentCredentialsSpecSchema>;
export type Credential = z.infer<typeof CredentialSchema>;
export type Pricing = z.infer<typeof PricingSchema>;

export type CredentialsValidation = { ok: true; spec: AgentCredentialsSpec } | { ok: false; errors: string[] };

export function validateCredentialsSpec(raw: unknown): CredentialsValidation {
  const parsed = AgentCredentialsSpecSchema.safeParse(raw ?? {});
  return parsed.success
    ? { ok: true, spec: parsed.data }
    : { ok: false, errors: describeIssues(parsed.error, 'spec', AgentCredentialsSpecSchema) };
}

/** The AgentCredentials a (resolved) spec reaches its model through; "none" and absent: no gateway. */
export function gatewayCredentials(spec: { agent: { credentials?: string } }): string | undefined {
  const name = spec.agent.credentials;
  return name === NO_CREDENTIALS ? undefined : name;
}

/** The name "none" says "no credentials" in a task: an AgentCredentials may not take it. */
export function credentialsNameProblem(name: string): string | undefined {
  return name === NO_CREDENTIALS
    ? `metadata.name: "${NO_CREDENTIALS}" is reserved (spec.agent.credentials: ${NO_CREDENTIALS} opts a task out of the default)`
    : undefined;
}

export function upstreamOf(spec: AgentCredentialsSpec): string {
  return (spec.upstream ?? DEFAULT_UPSTREAM[spec.provider]).replace(/\/+$/, '');
}

/** The price of `model`: its own entry, else the longest matching prefix ("claude-*"), else "*". */
export function pricingFor(pricing: Readonly<Record<string, Pricing>>, model: string | undefined): Pricing | undefined {
  if (model && Object.hasOwn(pricing, model)) return pricing[model];
  let best: { length: number; price: Pricing } | undefined;
  for (const [key, price] of Object.entries(pricing)) {
    if (!key.endsWith('*')) continue;
    const prefix = key.slice(0, -1);
    if ((model ?? '').startsWith(prefix) && (!best || prefix.length > best.length))
      best = { length: prefix.length, price };
  }
  return best?.price;
}
