// The CustomResourceDefinitions (AgentTask, AgentEpisode), generated from the zod schemas in agent-task.ts
// and episode-record.ts so the apiserver and the controller can never disagree. zod emits JSON Schema
// 2020-12; the apiserver wants a *structural* OpenAPI v3 schema (every node typed, no anyOf/const/$schema,
// no additionalProperties next to properties), so we convert node by node and fail loudly on anything we
// do not know how to translate.
import { z } from 'zod';
import { stringify } from 'yaml';
import {
  budgetPrinterColumns,
  credentialsPrinterColumns,
  episodePrinterColumns,
  printerColumns,
  triggerPrinterColumns,
} from './crd-columns.ts';
import { AgentTaskSchema, DNS_LABEL_MAX, DNS_LABEL_PATTERN, GROUP, KIND, PLURAL, VERSION } from './agent-task.ts';
import { AgentEpisodeSchema, EPISODE_KIND, EPISODE_PLURAL } from './episode-record.ts';
import { AgentBudgetSchema, BUDGET_KIND, BUDGET_PLURAL } from './agent-budget.ts';
import { AgentCredentialsSchema, CREDENTIALS_KIND, CREDENTIALS_PLURAL, NO_CREDENTIALS } from './agent-credentials.ts';
import { AgentTriggerSchema, TRIGGER_KIND, TRIGGER_NAME_MAX, TRIGGER_PLURAL } from './agent-trigger.ts';

export const CRD_NAME = `${PLURAL}.${GROUP}`;
export const CRD_FILE = `crds/${GROUP}_${PLURAL}.yaml`;
const CRD_HEADER = '# Generated from controller/api/agent-task.ts by `episodic crd`. Do not edit.\n';
export const EPISODE_CRD_NAME = `${EPISODE_PLURAL}.${GROUP}`;
export const EPISODE_CRD_FILE = `crds/${GROUP}_${EPISODE_PLURAL}.yaml`;
const EPISODE_CRD_HEADER = '# Generated from controller/api/episode-record.ts by `episodic crd`. Do not edit.\n';

export const BUDGET_CRD_NAME = `${BUDGET_PLURAL}.${GROUP}`;
export const BUDGET_CRD_FILE = `crds/${GROUP}_${BUDGET_PLURAL}.yaml`;
const BUDGET_CRD_HEADER = '# Generated from controller/api/agent-budget.ts by `episodic crd`. Do not edit.\n';

export const TRIGGER_CRD_NAME = `${TRIGGER_PLURAL}.${GROUP}`;
export const TRIGGER_CRD_FILE = `crds/${GROUP}_${TRIGGER_PLURAL}.yaml`;
const TRIGGER_CRD_HEADER = '# Generated from controller/api/agent-trigger.ts by `episodic crd`. Do not edit.\n';

export const CREDENTIALS_CRD_NAME = `${CREDENTIALS_PLURAL}.${GROUP}`;
export const CREDENTIALS_CRD_FILE = `crds/${GROUP}_${CREDENTIALS_PLURAL}.yaml`;
const CREDENTIALS_CRD_HEADER = '# Generated from controller/api/agent-credentials.ts by `episodic crd`. Do not edit.\n';

type Json = Record<string, unknown>;

// Keywords that mean the same in JSON Schema and in the apiserver's OpenAPI v3 subset.
const COPIED_KEYWORDS = new Set([
  'type',
  'description',
  'default',
  'enum',
  'format',
  'pattern',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'required',
  'nullable',
]);
// Keywords that carry no validation the apiserver can use.
const DROPPED_KEYWORDS = new Set(['$schema', 'propertyNames', 'title', 'examples']);

/** Meta key: the JSON Schema a zod node has in the CRD instead of its own (see ops-status.ts). */
export const CRD_AS = 'x-episodic-crd-as';

/** Convert one JSON Schema node (as produced by z.toJSONSchema) into a structural OpenAPI v3 node. */
export function toStructuralSchema(node: Json, path = '$'): Json {
  // A node that names its CRD form (x-episodic-crd-as): a union the apiserver's CEL rules must see typed.
  if (typeof node[CRD_AS] === 'object' && node[CRD_AS] !== null) return toStructuralSchema(node[CRD_AS] as Json, path);
  if (Array.isArray(node.anyOf)) return convertUnion(node, path);
  // A discriminated union (agent ops) is a union like any other here.
  if (Array.isArray(node.oneOf)) {
    const { oneOf, ...rest } = node;
    return convertUnion({ ...rest, anyOf: oneOf }, path);
  }
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (COPIED_KEYWORDS.has(key) || key.startsWith('x-kubernetes-')) {
      out[key] = value;
    } else if (DROPPED_KEYWORDS.has(key)) {
    } else if (key === 'const') {
      out.enum = [value];
    } else if (key === 'minimum' || key === 'maximum') {
      // zod bounds every int() by Number.MAX_SAFE_INTEGER; that is noise in a CRD.
      if (Math.abs(value as number) !== Number.MAX_SAFE_INTEGER) out[key] = value;
    } else if (key === 'exclusiveMinimum' || key === 'exclusiveMaximum') {
      // 2020-12 has a numeric bound; OpenAPI 3.0 has a boolean next to minimum/maximum.
      out[key === 'exclusiveMinimum' ? 'minimum' : 'maximum'] = value;
      out[key] = true;
    } else if (key === 'properties') {
      const props: Json = {};
      for (const [name, child] of Object.entries(value as Record<string, Json>)) {
        props[name] = toStructuralSchema(child, `${path}.${name}`);
      }
      out.properties = props;
    } else if (key === 'items') {
      out.items = toStructuralSchema(value as Json, `${path}[]`);
    } else if (key === 'additionalProperties') {
      // `false` (zod's strict objects) is the apiserver's default pruning anyway and is not allowed next
      // to properties; a schema (a record) is kept.
      if (typeof value === 'object' && value !== null) {
        out.additionalProperties = toStructuralSchema(value as Json, `${path}{}`);
      }
    } else {
      throw new Error(`crd: cannot translate JSON Schema keyword "${key}" at ${path}`);
    }
  }
  if (out.type === undefined && out['x-kubernetes-preserve-unknown-fields'] !== true) {
    throw new Error(`crd: schema node at ${path} has no type; structural schemas need one`);
  }
  return typeAndDescriptionFirst(out);
}

// Readers of the YAML (and of kubectl explain) look for these first.
function typeAndDescriptionFirst(node: Json): Json {
  const { type, description, ...rest } = node;
  return { ...(type === undefined ? {} : { type }), ...(description === undefined ? {} : { description }), ...rest };
}

function convertUnion(node: Json, path: string): Json {
  const { anyOf, ...rest } = node;
  const variants = anyOf as Json[];
  const nonNull = variants.filter((v) => v.type !== 'null');
  // `X | null` is OpenAPI's `nullable: true`.
  if (nonNull.length === 1 && variants.length === 2) {
    return toStructuralSchema({ ...rest, ...nonNull[0], nullable: true }, path);
  }
  // A real union has no structural form: accept any value here and let the controller validate it with
  // zod (it reports InvalidSpec), and tell kubectl-explain readers what the shapes are.
  const shapes = nonNull.map(describeShape).join(' | ');
  const base = typeof rest.description === 'string' ? `${rest.description}. ` : '';
  const out: Json = {
    description: `${base}One of: ${shapes}. Validated by the controller (InvalidSpec), not the apiserver.`,
    'x-kubernetes-preserve-unknown-fields': true,
  };
  if (variants.length !== nonNull.length) out.nullable = true;
  return out;
}

function describeShape(variant: Json): string {
  if (variant.type !== 'object' || typeof variant.properties !== 'object' || variant.properties === null) {
    return String(variant.type ?? 'any');
  }
  return `{${Object.keys(variant.properties).join(', ')}}`;
}

/** A top-level field's schema with its own description (kubectl explain shows it). */
function field(properties: Record<string, Json>, name: string, description: string): Json {
  return typeAndDescriptionFirst({ ...toStructuralSchema(properties[name], `$.${name}`), description });
}

/** The openAPIV3Schema of a kind: `fields` (spec, status, record…) from its zod schema, the rest standard. */
function openApiSchema(
  schema: z.ZodType,
  description: string,
  fields: Record<string, string>,
  required: string[],
  rules?: Json[],
): Json {
  const jsonSchema = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', cycles: 'throw' }) as Json;
  const properties = jsonSchema.properties as Record<string, Json>;
  return {
    type: 'object',
    description,
    properties: {
      // apiVersion/kind are checked by the apiserver itself; an enum here would break future versions.
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      // The apiserver allows no restrictions on metadata beyond name/generateName.
      metadata: { type: 'object' },
      ...Object.fromEntries(Object.entries(fields).map(([name, text]) => [name, field(properties, name, text)])),
    },
    required,
    ...(rules ? { 'x-kubernetes-validations': rules } : {}),
  };
}

// The apiserver accepts any DNS subdomain (253 characters, dots) as a name; a task's name becomes the
// value of its pods' episodic.dev/task label (63 at most, no dots), as the zod schema says. CEL on the
// root is the one place a CRD may check metadata.name.
const nameIsDnsLabel: Json = {
  rule: `self.metadata.name.size() <= ${DNS_LABEL_MAX} && self.metadata.name.matches('${DNS_LABEL_PATTERN}')`,
  message: `metadata.name must be a lowercase RFC 1123 label of at most ${DNS_LABEL_MAX} characters (a-z, 0-9, "-"; no dots): it becomes a label value of the task's pods`,
};

// spec.agent.credentials: none opts a task out of its namespace's default, so no AgentCredentials takes the name.
const credentialsNameNotNone: Json = {
  rule: `self.metadata.name != '${NO_CREDENTIALS}'`,
  message: `metadata.name "${NO_CREDENTIALS}" is reserved: spec.agent.credentials: ${NO_CREDENTIALS} opts a task out of the namespace default`,
};

/** The openAPIV3Schema of the AgentTask CRD. */
function agentTaskOpenApiSchema(): Json {
  return openApiSchema(
    AgentTaskSchema,
    'AgentTask runs an AI coding agent in episodes until it reports completion or a limit is hit.',
    { spec: 'What to run, where, and when it is done.', status: 'Observed state, written by the controller.' },
    ['spec'],
    [nameIsDnsLabel],
  );
}

/** The openAPIV3Schema of the AgentEpisode CRD. */
function agentEpisodeOpenApiSchema(): Json {
  return openApiSchema(
    AgentEpisodeSchema,
    'AgentEpisode is the immutable record of one finished episode of an AgentTask, written by the controller.',
    { record: 'How the episode ended, what it cost and the evidence it left. Immutable.' },
    ['record'],
  );
}

/** The openAPIV3Schema of the AgentBudget CRD. */
function agentBudgetOpenApiSchema(): Json {
  return openApiSchema(
    AgentBudgetSchema,
    'AgentBudget limits what the AgentTasks it selects may spend in a rolling window or in total; checked before every episode.',
    {
      spec: 'Which tasks, how much, and over what window.',
      status: 'Spend in the window, what is left, and the tasks held; written by the controller.',
    },
    ['spec'],
    [nameIsDnsLabel],
  );
}

/** The openAPIV3Schema of the AgentTrigger CRD: its name prefixes its tasks' names, so it is shorter. */
function agentTriggerOpenApiSchema(): Json {
  return openApiSchema(
    AgentTriggerSchema,
    "AgentTrigger creates AgentTasks from a schedule, a forge's issues or pull requests, or webhooks.",
    {
      spec: 'Where items come from and the AgentTask each one becomes.',
      status: 'Polls, items seen and tasks created; written by the controller.',
    },
    ['spec'],
    [
      nameIsDnsLabel,
      {
        rule: `self.metadata.name.size() <= ${TRIGGER_NAME_MAX}`,
        message: `metadata.name: at most ${TRIGGER_NAME_MAX} characters for an AgentTrigger (its tasks are named NAME-NUMBER)`,
      },
    ],
  );
}

interface CrdInput {
  kind: string;
  plural: string;
  shortName: string;
  /** `kubectl get episodic` lists the kinds in that category. */
  categories?: string[];
  subresources?: object;
  columns: object[];
  schema: Json;
}

function crd(input: CrdInput): object {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${input.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      names: {
        kind: input.kind,
        listKind: `${input.kind}List`,
        plural: input.plural,
        singular: input.kind.toLowerCase(),
        shortNames: [input.shortName],
        ...(input.categories ? { categories: input.categories } : {}),
      },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          ...(input.subresources ? { subresources: input.subresources } : {}),
          additionalPrinterColumns: input.columns,
          schema: { openAPIV3Schema: input.schema },
        },
      ],
    },
  };
}

export function agentTaskCrd(): object {
  return crd({
    kind: KIND,
    plural: PLURAL,
    shortName: 'at',
    categories: ['episodic'],
    subresources: { status: {} },
    columns: printerColumns,
    schema: agentTaskOpenApiSchema(),
  });
}

export function agentEpisodeCrd(): object {
  // Not in the category: `kubectl get episodic` shows the tasks, not up to history.keep records of each.
  return crd({
    kind: EPISODE_KIND,
    plural: EPISODE_PLURAL,
    shortName: 'ae',
    columns: episodePrinterColumns,
    schema: agentEpisodeOpenApiSchema(),
  });
}

function agentBudgetCrd(): object {
  return crd({
    kind: BUDGET_KIND,
    plural: BUDGET_PLURAL,
    shortName: 'ab',
    categories: ['episodic'],
    subresources: { status: {} },
    columns: budgetPrinterColumns,
    schema: agentBudgetOpenApiSchema(),
  });
}

function agentTriggerCrd(): object {
  return crd({
    kind: TRIGGER_KIND,
    plural: TRIGGER_PLURAL,
    shortName: 'atr',
    categories: ['episodic'],
    subresources: { status: {} },
    columns: triggerPrinterColumns,
    schema: agentTriggerOpenApiSchema(),
  });
}

// lineWidth 0: no folding, so diffs of the checked-in files stay one line per change.
const yamlOf = (header: string, make: () => object) => () => header + stringify(make(), { lineWidth: 0 });

function agentCredentialsCrd(): object {
  const schema = openApiSchema(
    AgentCredentialsSchema,
    "AgentCredentials: the model provider and upstream a task's agent reaches through the gateway, the credentials the controller holds for it (never the agent), and what its models cost.",
    {
      spec: 'Provider, upstream, credentials (Secret keys) and pricing.',
      status: "Each credential's state and use; never a key. Written by the controller.",
    },
    ['spec'],
    [nameIsDnsLabel, credentialsNameNotNone],
  );
  return crd({
    kind: CREDENTIALS_KIND,
    plural: CREDENTIALS_PLURAL,
    shortName: 'acr',
    categories: ['episodic'],
    subresources: { status: {} },
    columns: credentialsPrinterColumns,
    schema,
  });
}

/** Every CRD of episodic: its checked-in file and its generated YAML. */
export const CRDS: ReadonlyArray<{ name: string; file: string; yaml: () => string }> = [
  { name: CRD_NAME, file: CRD_FILE, yaml: yamlOf(CRD_HEADER, agentTaskCrd) },
  { name: EPISODE_CRD_NAME, file: EPISODE_CRD_FILE, yaml: yamlOf(EPISODE_CRD_HEADER, agentEpisodeCrd) },
  { name: BUDGET_CRD_NAME, file: BUDGET_CRD_FILE, yaml: yamlOf(BUDGET_CRD_HEADER, agentBudgetCrd) },
  { name: TRIGGER_CRD_NAME, file: TRIGGER_CRD_FILE, yaml: yamlOf(TRIGGER_CRD_HEADER, agentTriggerCrd) },
  {
    name: CREDENTIALS_CRD_NAME,
    file: CREDENTIALS_CRD_FILE,
    yaml: yamlOf(CREDENTIALS_CRD_HEADER, agentCredentialsCrd),
  },
];

/** What `episodic crd` prints: every CRD, one YAML document each. */
export function allCrdsYaml(): string {
  return CRDS.map((c) => c.yaml()).join('---\n');
}
