// The AgentTrigger contract (episodic.dev/v1alpha1): one source (a schedule, a forge's issues or pull
// requests, or webhooks) and a template (an AgentTask spec plus labels/annotations) that becomes one task
// per matching item or tick. Like AgentTask, this zod schema is the one source of types, defaults,
// validation messages and the CRD.
import { z } from 'zod';
import { Cron } from 'croner';
import { API_VERSION, MetadataSchema, TemplateTaskSpecSchema } from './agent-task.ts';
import { gitWorkspaceOf } from './git-workspace.ts';
import { INTO_OWN_REF, sameBranch } from './integrate.ts';
import { LINE_MAX, TRIGGER_ERROR_MAX } from './bounds.ts';
import { describeIssues } from './validate.ts';

export const TRIGGER_KIND = 'AgentTrigger';
export const TRIGGER_PLURAL = 'agenttriggers';
/** Tasks a trigger created carry this label (value: the trigger's name). */
export const TRIGGER_LABEL = 'episodic.dev/trigger';
/** A trigger's name plus "-" plus an item number or a tick (11 digits) must still be a 63-character label. */
export const TRIGGER_NAME_MAX = 50;

const ownerRepo = z
  .string()
  .regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, 'must be OWNER/NAME')
  .max(200);

const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')
  .max(128);

export const SecretKeyRefSchema = z.strictObject({
  name: z.string().min(1).max(253),
  key: z.string().min(1).max(253),
});

export const PERMISSIONS = ['read', 'triage', 'write', 'maintain', 'admin'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const CommandSchema = z.strictObject({
  text: z
    .string()
    .regex(/^\/[A-Za-z0-9_-]+$/, 'must be a slash command such as /episodic')
    .default('/episodic'),
  minPermission: z.enum(PERMISSIONS).default('write').describe('the commenter needs at least this on the repo'),
});

/** Deliveries to POST /hooks/NAMESPACE/NAME, signed with this secret, wake the trigger's poll at once. */
export const WakeHookSchema = z.strictObject({
  secretEnv: envName.optional().describe('local: the environment variable holding the HMAC secret'),
  secretRef: SecretKeyRefSchema.optional().describe('cluster: the Secret key holding the HMAC secret'),
});

const forgeFields = {
  repo: ownerRepo.describe('OWNER/NAME'),
  kind: z.enum(['issues', 'pullRequests']).default('issues'),
  labels: z.array(z.string().min(1).max(100)).max(20).default([]).describe('an open item with all of them matches'),
  excludeAuthors: z.array(z.string().min(1).max(100)).max(100).default([]).describe('never trigger (bots never do)'),
  command: CommandSchema.optional().describe('a comment starting with this text from a permitted user matches'),
  pollSeconds: z.number().int().min(10).max(86_400).default(60),
  tokenEnv: envName.optional().describe('local: the environment variable holding the API token'),
  tokenSecretRef: SecretKeyRefSchema.optional().describe('cluster: the Secret key holding the API token'),
  webhook: WakeHookSchema.optional().describe(
    'signed deliveries (issues, issue_comment, pull_request) wake the poll at once; the poll reads the forge',
  ),
};

export const GiteaSourceSchema = z.strictObject({
  ...forgeFields,
  apiURL: z.url().max(500).describe('the server, e.g. https://gitea.example.com (Gitea or Forgejo)'),
});

export const GitHubSourceSchema = z.strictObject({
  ...forgeFields,
  apiURL: z.url().max(500).default('https://api.github.com'),
});

export const ScheduleSourceSchema = z
  .strictObject({
    cron: z.string().min(1).max(200).describe('five fields (minute hour day month weekday), as CronJob'),
    timeZone: z.string().min(1).max(100).default('UTC').describe('an IANA zone, e.g. Europe/Berlin'),
    concurrencyPolicy: z.enum(['Allow', 'Forbid', 'Replace']).default('Forbid'),
    startingDeadlineSeconds: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('a tick missed by more than this is skipped'),
    historyLimit: z.number().int().min(0).default(10).describe('finished tasks kept; older ones are deleted'),
  })
  .superRefine((s, ctx) => {
    const problem = cronProblem(s.cron, s.timeZone);
    if (problem) ctx.addIssue({ code: 'custom', path: [problem.field], message: problem.message });
  });

/**
 * Deliveries are the only source: each signed issues/issue_comment/pull_request event is judged like a poll
 * result, by the same labels, command and excludeAuthors rules (the fields are the forge sources' own).
 * A command needs the commenter's permission, which no payload carries: then repo and a token are required.
 */
export const WebhookSourceSchema = z
  .strictObject({
    forge: z.enum(['github', 'gitea']),
    repo: forgeFields.repo.optional().describe('deliveries for other repositories are ignored'),
    labels: forgeFields.labels,
    excludeAuthors: forgeFields.excludeAuthors,
    command: forgeFields.command,
    secretEnv: WakeHookSchema.shape.secretEnv,
    secretRef: WakeHookSchema.shape.secretRef,
    apiURL: z.url().max(500).optional().describe('command permission checks: the server (GitHub: its API)'),
    tokenEnv: forgeFields.tokenEnv,
    tokenSecretRef: forgeFields.tokenSecretRef,
  })
  .superRefine((s, ctx) => {
    if (!s.secretEnv && !s.secretRef)
      ctx.addIssue({ code: 'custom', path: [], message: 'needs secretEnv (local) or secretRef (cluster)' });
    if (!s.command) return;
    const missing = [
      !s.repo && 'repo',
      !s.tokenEnv && !s.tokenSecretRef && 'tokenEnv or tokenSecretRef',
      s.forge === 'gitea' && !s.apiURL && 'apiURL',
    ].filter((m): m is string => !!m);
    if (missing.length > 0)
      ctx.addIssue({
        code: 'custom',
        path: ['command'],
        message: `checking a commenter's permission needs ${missing.join(', ')}`,
      });
  });

const ONE_SOURCE = 'exactly one of schedule, gitea, github or webhook';

export const TriggerSourceSchema = z
  .strictObject({
    schedule: ScheduleSourceSchema.optional(),
    gitea: GiteaSourceSchema.optional(),
    github: GitHubSourceSchema.optional(),
    webhook: WebhookSourceSchema.optional(),
  })
  .superRefine((source, ctx) => {
    const set = Object.values(source).filter((v) => v !== undefined).length;
    if (set !== 1) ctx.addIssue({ code: 'custom', path: [], message: ONE_SOURCE });
  });

export const TaskTemplateSchema = z.strictObject({
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  spec: TemplateTaskSpecSchema.describe(
    'an AgentTask spec; {{item.number}}, {{item.title}}, {{item.body}}, {{item.url}}, {{item.author}}, {{item.labels}}, {{item.comment}} and {{tick}} are filled in prompts only',
  ),
});

export const ReportSchema = z.strictObject({
  comment: z.boolean().default(false).describe('one comment per item, edited in place as the task moves'),
  labels: z
    .strictObject({ running: z.string().optional(), done: z.string().optional(), review: z.string().optional() })
    .optional(),
  pullRequest: z
    .strictObject({
      draft: z.boolean().default(false),
      base: z.string().min(1).max(250).optional(),
      titleTemplate: z.string().min(1).max(300).default('{{item.title}}'),
    })
    .optional(),
});

export const AgentTriggerSpecSchema = z
  .strictObject({
    source: TriggerSourceSchema,
    template: TaskTemplateSchema,
    maxConcurrency: z.number().int().positive().default(1).describe('tasks of this trigger not yet finished'),
    maxTotal: z.number().int().positive().optional().describe('tasks this trigger ever creates'),
    suspend: z.boolean().default(false),
    report: ReportSchema.optional(),
  })
  .superRefine((spec, ctx) => {
    const into = templateIntoProblem(spec);
    if (into) ctx.addIssue({ code: 'custom', path: ['template', 'spec', 'integrate', 'into'], message: into });
    if (!spec.report || !spec.source.webhook) return;
    for (const m of webhookReportMissing(spec.source.webhook))
      ctx.addIssue({ code: 'custom', path: ['source', 'webhook', m.field], message: m.message });
  });

/** The branch an issue item's task works on when the trigger opens PRs (a PR item's: its own head branch). */
export const issueBranch = (number: number) => `episodic/${number}`;
const ISSUE_BRANCH = /^(refs\/heads\/)?episodic\/[0-9]+$/;

/**
 * Why the template's integrate.into cannot be, measured against the ref each item's task gets: the template's
 * own, unless report.pullRequest gives every task its item's branch (trigger-report-plan.ts itemBranch).
 */
export function templateIntoProblem(spec: {
  template: { spec: { workspace?: string | { git: { ref: string } } | object; integrate?: { into: string } } };
  report?: { pullRequest?: unknown };
}): string | undefined {
  const git = gitWorkspaceOf(spec.template.spec.workspace);
  const into = spec.template.spec.integrate?.into;
  if (!git || !into) return undefined;
  if (!spec.report?.pullRequest) return sameBranch(git.ref, into) ? INTO_OWN_REF : undefined;
  return ISSUE_BRANCH.test(into)
    ? "must not be an item's branch (episodic/NUMBER): each item's task works on its own"
    : undefined;
}

/**
 * What a webhook source lacks for spec.report: the comment, labels and PR are written through the forge's
 * API, as a forge source's are (one field per entry; the validator and the trigger's status both say it).
 */
export function webhookReportMissing(s: WebhookSource): Array<{ field: string; message: string }> {
  const why = 'spec.report writes through the forge API';
  return [
    !s.repo && { field: 'repo', message: `${why}: needs the repository (OWNER/NAME)` },
    !s.tokenEnv &&
      !s.tokenSecretRef && { field: 'tokenEnv', message: `${why}: needs tokenEnv (local) or tokenSecretRef (cluster)` },
    s.forge === 'gitea' && !s.apiURL && { field: 'apiURL', message: `${why}: needs the Gitea server's URL` },
  ].filter((m): m is { field: string; message: string } => !!m);
}

/**
 * Bounds on item text a trigger renders into a prompt (`labels`: the joined list) or keeps in a held item
 * (`label` each, `labelCount` of them, its `branch`): a 1 MB issue body does not become a 1 MB prompt.
 */
export const ITEM_TEXT_MAX = {
  title: 256,
  body: 8 * 1024,
  comment: 4 * 1024,
  author: 100,
  url: 500,
  labels: 1024,
  label: 100,
  labelCount: 50,
  branch: 255,
};

/** Webhook items held back by maxConcurrency (reconciler/trigger-held.ts): at most this many are kept. */
export const HELD_ITEMS_MAX = 10;
const HeldItemSchema = z.object({
  number: z.number().int().positive(),
  title: z.string().max(ITEM_TEXT_MAX.title),
  body: z.string().max(ITEM_TEXT_MAX.body),
  url: z.string().max(ITEM_TEXT_MAX.url),
  author: z.string().max(ITEM_TEXT_MAX.author),
  labels: z.array(z.string().max(ITEM_TEXT_MAX.label)).max(ITEM_TEXT_MAX.labelCount),
  pullRequest: z.boolean().optional(),
  headBranch: z.string().max(ITEM_TEXT_MAX.branch).optional(),
  comment: z
    .object({
      id: z.number().int(),
      author: z.string().max(ITEM_TEXT_MAX.author),
      body: z.string().max(ITEM_TEXT_MAX.comment),
    })
    .optional(),
});
export type HeldItem = z.infer<typeof HeldItemSchema>;
const HeldStatusFields = {
  heldItems: z
    .array(HeldItemSchema)
    .max(HELD_ITEMS_MAX)
    .optional()
    .describe('webhook: matching items waiting for maxConcurrency, created when a task finishes'),
  heldOverflow: z.number().int().nonnegative().optional().describe('webhook: waiting items past heldItems (lost)'),
};

/**
 * Why a seen item got no task (reconciler/trigger-items.ts judgeItem): status.itemsSkipped counts each, so a
 * trigger that creates nothing says why. A fixed set of keys: the map stays bounded.
 */
const skippedCount = (why: string) => z.number().int().nonnegative().optional().describe(why);
export const ItemsSkippedSchema = z.strictObject({
  closed: skippedCount('the item is closed'),
  bot: skippedCount('the item, or its command comment, is by a bot'),
  excludedAuthor: skippedCount('the item, or its command comment, is by one of excludeAuthors'),
  labelsMissing: skippedCount('the item lacks a label of source.labels (and has no permitted command)'),
  noCommand: skippedCount('commands only (no labels): the item has no command comment'),
  commandNotPermitted: skippedCount("the command comment's author has less than command.minPermission"),
  taskExists: skippedCount('its task exists and no newer permitted command asks again (e.g. a report bumped it)'),
  taskRunning: skippedCount("a newer command came while the item's task was still running"),
});
export type ItemsSkipped = z.infer<typeof ItemsSkippedSchema>;
export type SkipReason = keyof ItemsSkipped;

/** Items a pass could not judge (status.itemsUndecided): at most this many are named. */
export const UNDECIDED_ITEMS_MAX = 20;
/** Longest reason an undecided item is named with (a forge's answer on one line). */
export const UNDECIDED_REASON_MAX = LINE_MAX;
export const UndecidedItemSchema = z.strictObject({
  number: z.number().int().positive(),
  reason: z
    .string()
    .max(UNDECIDED_REASON_MAX)
    .describe('why it could not be judged, and the token rights that would let it'),
});
export type UndecidedItem = z.infer<typeof UndecidedItemSchema>;

/** reconciler/trigger-report.ts ReportedState. */
const ReportedSchema = z.object({
  comment: z.string().max(64).optional().describe('a digest of the comment text last written'),
  label: z.string().max(100).optional(),
  publishedBranch: z.string().max(255).optional(),
  at: z.string().max(40).optional(),
});

export const AgentTriggerStatusSchema = z.object({
  lastPollAt: z.string().optional(),
  nextPollAt: z.string().optional(),
  lastTick: z.string().optional().describe('schedule: the newest tick a task was created (or skipped) for'),
  itemsSeen: z.number().int().nonnegative().default(0),
  tasksActive: z.number().int().nonnegative().default(0),
  tasksCreated: z.number().int().nonnegative().default(0),
  rateLimitedUntil: z.string().optional(),
  lastError: z.string().max(TRIGGER_ERROR_MAX).optional(),
  cursor: z.string().optional().describe('forge polls: the since= of the next poll'),
  cursorItems: z
    .array(z.string().max(200))
    .max(200)
    .optional()
    .describe(
      'items (number and state) handled at exactly the cursor: since= is inclusive, they are not fetched again',
    ),
  reported: z
    .record(z.string(), ReportedSchema)
    .optional()
    .describe('spec.report: what was last reported on the item of each task (a restart does not post it again)'),
  pullRequests: z
    .record(z.string(), z.strictObject({ number: z.number().int().positive(), url: z.string().max(500) }))
    .optional()
    .describe('spec.report.pullRequest: the pull request opened (or updated) for each task, by task name'),
  itemsSkipped: ItemsSkippedSchema.optional().describe(
    'items seen that got no task, counted by reason (as itemsSeen, an item seen again counts again)',
  ),
  itemsUndecided: z
    .array(UndecidedItemSchema)
    .max(UNDECIDED_ITEMS_MAX)
    .optional()
    .describe('forge polls: items the last pass could not judge; they wait (polled again), the others go on'),
  observedGeneration: z.number().int().optional(),
  ...HeldStatusFields,
});

export const AgentTriggerSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(TRIGGER_KIND),
  metadata: MetadataSchema,
  spec: AgentTriggerSpecSchema,
  status: AgentTriggerStatusSchema.optional(),
});

export type AgentTriggerSpec = z.infer<typeof AgentTriggerSpecSchema>;
export type AgentTriggerStatus = z.infer<typeof AgentTriggerStatusSchema>;
export type TriggerSource = z.infer<typeof TriggerSourceSchema>;
export type ScheduleSource = z.infer<typeof ScheduleSourceSchema>;
export type ForgeSource = z.infer<typeof GiteaSourceSchema> | z.infer<typeof GitHubSourceSchema>;
export type WebhookSource = z.infer<typeof WebhookSourceSchema>;
export type TaskTemplate = z.infer<typeof TaskTemplateSchema>;

/** The problem with a cron expression or time zone, or undefined: five fields, a zone Intl knows. */
export function cronProblem(cron: string, timeZone: string): { field: string; message: string } | undefined {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch {
    return { field: 'timeZone', message: `unknown time zone "${timeZone}"` };
  }
  if (cron.trim().split(/\s+/).length !== 5)
    return { field: 'cron', message: 'expected five fields: minute hour day-of-month month day-of-week' };
  try {
    new Cron(cron, { timezone: timeZone, paused: true });
  } catch (err) {
    return { field: 'cron', message: (err as Error).message };
  }
  return undefined;
}

export type TriggerValidation = { ok: true; spec: AgentTriggerSpec } | { ok: false; errors: string[] };

export function validateTriggerSpec(raw: unknown): TriggerValidation {
  const parsed = AgentTriggerSpecSchema.safeParse(raw ?? {});
  return parsed.success
    ? { ok: true, spec: parsed.data }
    : { ok: false, errors: describeIssues(parsed.error, 'spec', AgentTriggerSpecSchema) };
}

/** The trigger's name is the prefix of its tasks' names: it must leave room for "-" and a number. */
export function triggerNameProblem(name: string): string | undefined {
  return name.length > TRIGGER_NAME_MAX
    ? `metadata.name: at most ${TRIGGER_NAME_MAX} characters for an AgentTrigger (its tasks are named NAME-NUMBER)`
    : undefined;
}
