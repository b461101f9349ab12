// The AgentTask contract (episodic.dev/v1alpha1). This zod schema is the single source of truth:
// TypeScript types, defaults, validation messages and the CRD's OpenAPI schema all come from it.
import { AttemptsSchema } from './attempts.ts';
import { outputRefProblems } from './output-refs.ts';
import { z } from 'zod';
import { AgentTaskStatusSchema } from './agent-task-status.ts';
import { BreakerSpecSchema, ProgressSpecSchema } from './leash.ts';
import { ResumeSpecSchema } from './resume.ts';
import { ScopeSchema } from './scope.ts';
import { INTO_OWN_REF, integrateSchema, sameBranch } from './integrate.ts';
import { SandboxSchema } from './sandbox.ts';
import { OPS_SPEC_FIELDS } from './ops-status.ts';
import { SPAWN_LIMIT_FIELDS, SPAWN_SPEC_FIELDS } from './spawn-fields.ts';
import { duplicateStepNames, overTask, STEP_LIMITS_MASK, STEPS_MAX, stepSchema } from './step-schema.ts';
import { gitWorkspaceOf } from './git-workspace.ts';

// The status schemas live in agent-task-status.ts; every name stays importable from here.
export * from './agent-task-status.ts';

export const GROUP = 'episodic.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'AgentTask';
export const PLURAL = 'agenttasks';

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

// RFC 1123 label: what Kubernetes accepts for names we turn into pod names and label values. The CRD
// enforces the same on metadata.name (crd.ts), so the apiserver refuses what no pod could carry.
export const DNS_LABEL_MAX = 63;
export const DNS_LABEL_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
const dnsLabel = z
  .string()
  .min(1)
  .max(DNS_LABEL_MAX)
  .regex(new RegExp(DNS_LABEL_PATTERN), 'must be a lowercase RFC 1123 label (a-z, 0-9, "-")');

const argv = z.array(z.string().min(1)).min(1).describe('argv array, never a shell string');

const secretKeySelector = z.strictObject({
  name: z.string().min(1),
  key: z.string().min(1),
  optional: z.boolean().optional(),
});

export const EnvVarSchema = z.strictObject({
  name: z
    .string()
    .min(1)
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a valid environment variable name'),
  value: z.string().optional(),
  valueFrom: z
    .object({ secretKeyRef: secretKeySelector.optional(), configMapKeyRef: secretKeySelector.optional() })
    .optional()
    .describe('cluster mode only: read the value from a Secret or ConfigMap; never copied into status'),
});

export const EnvFromSchema = z.strictObject({
  secretRef: z.strictObject({ name: z.string().min(1) }).optional(),
  configMapRef: z.strictObject({ name: z.string().min(1) }).optional(),
  prefix: z.string().optional(),
});

export const PricingSchema = z
  .strictObject({
    inputPerMTok: z.number().nonnegative(),
    outputPerMTok: z.number().nonnegative(),
    cacheReadPerMTok: z.number().nonnegative().optional(),
    cacheWritePerMTok: z.number().nonnegative().optional(),
  })
  .describe('USD per million tokens, for agents that report tokens but no cost (codex, gemini)');

export const AgentSchema = z.strictObject({
  command: argv,
  promptVia: z.enum(['stdin', 'argument', 'file']).default('stdin'),
  output: z.enum(['auto', 'claude', 'codex', 'gemini', 'text']).default('auto'),
  env: z.array(EnvVarSchema).default([]),
  envFrom: z.array(EnvFromSchema).optional().describe('cluster mode only'),
  pricing: PricingSchema.optional(),
  credentials: z
    .string()
    .min(1)
    .max(253)
    .regex(/^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/, 'must be the name of an AgentCredentials (lowercase)')
    .optional()
    .describe(
      'the AgentCredentials the agent reaches its model through (the gateway): it gets a token, never a key; absent: the namespace default AgentCredentials (spec.default), if any; "none": no gateway, even when the namespace has a default',
    ),
  image: z.string().min(1).optional().describe('cluster mode: the agent image (required there)'),
  imagePullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).optional(),
  resources: z
    .object({
      requests: z.record(z.string(), z.string()).optional(),
      limits: z.record(z.string(), z.string()).optional(),
    })
    .optional()
    .describe('cluster mode: container resources'),
  serviceAccountName: z.string().optional().describe('cluster mode: service account of episode pods'),
});

// The url and ref reach git's argv: nothing that git could read as an option or a remote-helper command.
const TRANSPORT_HELPER = /^[A-Za-z0-9+.-]+::/;
const URL_SCHEMES = new Set(['https:', 'http:', 'ssh:', 'git:', 'file:', 'git+ssh:', 'ssh+git:']);

export function gitUrlProblem(url: string): string | undefined {
  if (url.startsWith('-')) return 'must not start with "-"';
  if (TRANSPORT_HELPER.test(url)) return 'remote-helper transports ("ext::", "fd::"…) are not allowed';
  if (/[\s\x00-\x1f\x7f]/.test(url)) return 'must not contain whitespace or control characters';
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*:)\/\//.exec(url)?.[1]?.toLowerCase();
  if (scheme && !URL_SCHEMES.has(scheme)) return `scheme ${scheme} is not one of https, http, ssh, git, file`;
  return undefined;
}

export function gitRefProblem(ref: string): string | undefined {
  const branch = ref.replace(/^refs\/heads\//, '');
  if (!/^[A-Za-z0-9._/-]+$/.test(branch)) return 'a branch name: letters, digits, ".", "_", "/" and "-" only';
  if (
    branch.startsWith('-') ||
    branch.startsWith('/') ||
    branch.endsWith('/') ||
    branch.includes('..') ||
    branch.includes('//') ||
    branch.endsWith('.lock')
  ) {
    return `"${ref}" is not a valid branch name`;
  }
  return undefined;
}

const gitBranch = z
  .string()
  .min(1)
  .max(255)
  .superRefine((ref, ctx) => {
    const problem = gitRefProblem(ref);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

export const GitWorkspaceSchema = z.strictObject({
  git: z.strictObject({
    url: z
      .string()
      .min(1)
      .max(2048)
      .superRefine((url, ctx) => {
        const problem = gitUrlProblem(url);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
    ref: z
      .string()
      .max(255)
      .default('main')
      .superRefine((ref, ctx) => {
        const problem = gitRefProblem(ref);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
    from: z
      .string()
      .max(255)
      .optional()
      .superRefine((ref, ctx) => {
        const problem = ref === undefined ? undefined : gitRefProblem(ref);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .describe('the branch a new ref starts from (default: the remote default branch); fan-out children get it'),
    secretRef: z.strictObject({ name: z.string().min(1) }).optional(),
  }),
});
export const VolumeWorkspaceSchema = z.strictObject({ volumeClaim: z.string().min(1) });

// Locally a workspace is a directory; on a cluster it may also be a git repo or a PVC.
export const WorkspaceSchema = z.union([z.string().min(1), GitWorkspaceSchema, VolumeWorkspaceSchema]);

export const CompletionSchema = z.strictObject({
  promise: z.string().min(1).default('COMPLETE').describe('done when the final output has <promise>VALUE</promise>'),
  verify: argv.optional().describe('argv run in the workspace after a completion signal; exit 0 required'),
  onExitZero: z.boolean().default(false).describe('exit code 0 alone means done'),
  requires: z
    .array(z.enum(['verify', 'changes', 'cleanTree', 'checklist']))
    .default([])
    .describe('evidence a completion signal needs; without it the episode only continues'),
  minEpisodes: z.number().int().min(1).default(1).describe('no completion before this many episodes'),
  checklist: z.boolean().default(false).describe('done when every item of progress.checklist is done or skipped'),
  signals: z
    .strictObject({
      threshold: z.number().int().min(1).max(100).default(60).describe('score at which the signals complete the task'),
    })
    .optional()
    .describe(
      "Gluon's multi-signal score: RALPH_STATUS EXIT_SIGNAL +50, checklist complete +40, completion keywords +10 each (at most +20), three test-only episodes in a row +100",
    ),
  contextTooLong: z
    .enum(['fatal', 'failed'])
    .default('fatal')
    .describe(
      "an episode whose request did not fit the model's context window: fatal (the task fails) or failed (counted, retried with backoff)",
    ),
  resetTimeZone: z
    .string()
    .min(1)
    .refine(isTimeZone, 'must be an IANA time zone such as Europe/Berlin or UTC')
    .optional()
    .describe(
      'IANA time zone of usage-limit reset times the agent prints without one (codex: "try again at 7:13 AM"); default: the zone the agent runs in',
    ),
});

export const LimitsSchema = z.strictObject({
  ...SPAWN_LIMIT_FIELDS,
  maxEpisodes: z.number().int().min(1).default(20),
  episodeTimeoutSeconds: z.number().int().min(1).default(3600),
  maxConsecutiveFailures: z.number().int().min(1).default(3),
  maxCostUSD: z.number().positive().optional(),
  maxTokens: z.number().int().positive().optional().describe('input + output tokens, all episodes'),
  expectedEpisodeCostUSD: z
    .number()
    .positive()
    .optional()
    .describe(
      "AgentBudgets: what one episode is expected to cost until the task has finished one (default: the budget's other tasks' average)",
    ),
});

export const BackoffSchema = z.strictObject({
  initialSeconds: z.number().min(0).default(10),
  factor: z.number().min(1).default(2),
  maxSeconds: z.number().min(0).default(600),
});

export const HistorySchema = z.strictObject({
  keep: z
    .number()
    .int()
    .min(1)
    .default(100)
    .describe('cluster: AgentEpisode records kept for this task; older ones are deleted'),
});

export const StepSchema = stepSchema({
  name: dnsLabel,
  agent: AgentSchema,
  completion: CompletionSchema,
  limits: LimitsSchema.pick(STEP_LIMITS_MASK),
});

// spec.stack (agent ops) is one more alternative; the words stay as existing specs and tests know them.
const PROMPT_RULE = 'exactly one of prompt or promptFile is required, or steps instead of both';

const SpecObject = z.strictObject({
  prompt: z.string().min(1).optional(),
  promptFile: z.string().min(1).optional().describe('path inside the workspace'),
  agent: AgentSchema,
  workspace: WorkspaceSchema.optional().describe('local: directory relative to the spec file (default ws/NAME)'),
  completion: CompletionSchema.default(() => CompletionSchema.parse({})),
  limits: LimitsSchema.default(() => LimitsSchema.parse({})),
  backoff: BackoffSchema.default(() => BackoffSchema.parse({})),
  dependsOn: z.array(dnsLabel).default([]).describe('names of AgentTasks in the same namespace'),
  suspend: z.boolean().default(false),
  progress: ProgressSpecSchema.default(() => ProgressSpecSchema.parse({})),
  breaker: BreakerSpecSchema.default(() => BreakerSpecSchema.parse({})),
  history: HistorySchema.default(() => HistorySchema.parse({})),
  resume: ResumeSpecSchema.default(() => ResumeSpecSchema.parse({})),
  steps: z
    .array(StepSchema)
    .min(1)
    .max(STEPS_MAX)
    .optional()
    .describe('a pipeline: steps run in order in the one workspace, each a loop of episodes of its own')
    .meta({
      'x-kubernetes-validations': [
        { rule: 'self.all(s, self.exists_one(t, t.name == s.name))', message: 'step names must be unique' },
      ],
    }),
  // scope (README "Scope"); a step's replaces it.
  scope: ScopeSchema.optional(),
  integrate: integrateSchema(dnsLabel, gitBranch)
    .optional()
    .describe('a merge queue: once the task succeeds, its branch is rebased onto `into`, gated and fast-forwarded'),
  // Best-of-N (api/attempts.ts).
  attempts: AttemptsSchema.optional(),
  // sandbox (README "Sandbox"); a step's replaces it.
  sandbox: SandboxSchema.optional(),
  ...OPS_SPEC_FIELDS,
  ...SPAWN_SPEC_FIELDS,
});

/** The spec's rules; `ownRef`: its git ref is its task's (a trigger's template has it replaced per item). */
function specRules(spec: z.infer<typeof SpecObject>, ctx: z.RefinementCtx, ownRef: boolean): void {
  // A step's completion is the task's with the step's fields over it: each is checked where it is written.
  const completions = [
    { completion: spec.completion, at: [] as PropertyKey[] },
    ...(spec.steps ?? []).map((step, i) => ({
      completion: overTask(spec.completion, step.completion),
      at: ['steps', i],
    })),
  ];
  for (const { completion, at } of completions) {
    if (completion.requires.includes('verify') && !completion.verify) {
      ctx.addIssue({
        code: 'custom',
        path: [...at, 'completion', 'requires'],
        message: 'requires verify, but completion.verify names no command',
      });
    }
    if ((completion.requires.includes('checklist') || completion.checklist) && !spec.progress.checklist) {
      ctx.addIssue({
        code: 'custom',
        path: ['progress', 'checklist'],
        message: 'a checklist completion needs progress.checklist (the plan file)',
      });
      break;
    }
  }
  const git = gitWorkspaceOf(spec.workspace);
  const noGit = 'needs a git workspace (workspace.git): the branch to integrate';
  if (spec.integrate && !git) ctx.addIssue({ code: 'custom', path: ['integrate'], message: noGit });
  else if (ownRef && spec.integrate && git && sameBranch(git.ref, spec.integrate.into)) {
    ctx.addIssue({ code: 'custom', path: ['integrate', 'into'], message: INTO_OWN_REF });
  }
  const prompts = [spec.prompt, spec.promptFile, spec.steps, spec.stack].filter((p) => p !== undefined).length;
  if (prompts !== 1) ctx.addIssue({ code: 'custom', path: ['prompt'], message: PROMPT_RULE });
  for (const dup of duplicateStepNames(spec.steps ?? []))
    ctx.addIssue({ code: 'custom', path: ['steps', dup.index, 'name'], message: dup.message });
  const attemptsGit = 'attempts need a git workspace (each on its own branch)';
  if (spec.attempts && !git) ctx.addIssue({ code: 'custom', path: ['attempts'], message: attemptsGit });
  if (spec.attempts?.select === 'judge' && !spec.attempts.judge)
    ctx.addIssue({ code: 'custom', path: ['attempts', 'judge'], message: 'select: judge needs judge.prompt' });
  for (const [i, step] of (spec.steps ?? []).entries()) {
    if (!step.attempts) continue;
    const why = spec.attempts ? 'attempts on the task and on a step, not both' : !git ? attemptsGit : undefined;
    if (why) ctx.addIssue({ code: 'custom', path: ['steps', i, 'attempts'], message: why });
  }
  for (const ref of outputRefProblems(spec).errors) ctx.addIssue({ code: 'custom', ...ref });
}

const SPEC_META = {
  'x-kubernetes-validations': [
    {
      rule: '(has(self.prompt) ? 1 : 0) + (has(self.promptFile) ? 1 : 0) + (has(self.steps) ? 1 : 0) + (has(self.stack) ? 1 : 0) == 1',
      message: PROMPT_RULE,
    },
  ],
};

export const AgentTaskSpecSchema = SpecObject.superRefine((s, c) => specRules(s, c, true)).meta(SPEC_META);
/** A trigger template's spec: `into` against the ref its item's task gets is the trigger's rule (agent-trigger.ts). */
export const TemplateTaskSpecSchema = SpecObject.superRefine((s, c) => specRules(s, c, false)).meta(SPEC_META);

/** The schema's defaults, for rules that must act on a task whose spec did not validate. */
export const DEFAULT_SPEC = {
  completion: CompletionSchema.parse({}),
  limits: LimitsSchema.parse({}),
  backoff: BackoffSchema.parse({}),
  breaker: BreakerSpecSchema.parse({}),
  resume: ResumeSpecSchema.parse({}),
} as const;

export const MetadataSchema = z.object({
  name: dnsLabel,
  namespace: dnsLabel.default('default'),
  uid: z.string().optional(),
  generation: z.number().int().optional(),
  resourceVersion: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  finalizers: z.array(z.string()).optional(),
  deletionTimestamp: z.string().optional(),
  creationTimestamp: z.string().optional(),
});

export const AgentTaskSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(KIND),
  metadata: MetadataSchema,
  spec: AgentTaskSpecSchema,
  status: AgentTaskStatusSchema.optional(),
});

export type AgentTask = z.infer<typeof AgentTaskSchema>;
export type AgentTaskSpec = z.infer<typeof AgentTaskSpecSchema>;

export function taskKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}
