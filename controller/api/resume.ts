// Supervised resume's part of the AgentTask contract: spec.resume (the auto-resume policy), status.resume
// (what was resumed, by whom, which request was handled), status.audit (the bounded history of stop and
// resume decisions) and the resume request a person makes (a file locally, an annotation on a cluster).
import { z } from 'zod';
import { clip, QUOTED_VALUE_MAX, REFUSED_TOKEN_MAX, requester } from './bounds.ts';

const count = z.number().int().nonnegative();

export const RESUME_POLICIES = ['Manual', 'Conservative', 'Aggressive'] as const;

export const ResumeSpecSchema = z.strictObject({
  policy: z
    .enum(RESUME_POLICIES)
    .default('Conservative')
    .describe('which NeedsReview reasons the controller may resume on its own (see the README table)'),
  maxAutoResumes: count.default(5).describe('auto-resumes allowed until a person resumes the task or edits its spec'),
  cooldownSeconds: z.number().min(0).default(60).describe('time a task stays in NeedsReview before an auto-resume'),
  grantEpisodes: z
    .number()
    .int()
    .min(1)
    .default(5)
    .describe(
      'episodes added to limits.maxEpisodes when a MaxEpisodesReached task is resumed (Aggressive, or by a person without --episodes)',
    ),
});

export const ResumeStatusSchema = z.object({
  autoResumes: count.default(0).describe('auto-resumes since a person last resumed the task or edited its spec'),
  grantedEpisodes: count.default(0).describe('episodes granted by resumes, on top of limits.maxEpisodes'),
  lastResumeAt: z.string().optional(),
  lastResumeBy: z.string().max(160).optional(),
  handledToken: z
    .string()
    .max(160)
    .optional()
    .describe('the last resume request handled (annotation episodic.dev/resume or the local request file)'),
  nextAutoResumeAt: z.string().optional().describe('set while an auto-resume is scheduled'),
  heldBy: z.string().max(64).optional().describe('the check that keeps the policy from resuming the task'),
});

export const AUDIT_ACTIONS = [
  'Stopped',
  'AutoResumeScheduled',
  'AutoResumeHeld',
  'Resumed',
  'ResumeRejected',
  'ResumeIgnored',
  // A person's suspend hold set or lifted (api/hold.ts).
  'Suspended',
  'Unsuspended',
] as const;
export const AUDIT_KEEP = 20;

export const AuditEntrySchema = z.object({
  at: z.string(),
  action: z.enum(AUDIT_ACTIONS),
  /** "controller", "policy:Conservative" or "user:NAME". */
  by: z.string().max(160),
  reason: z.string().max(64).optional(),
  message: z.string().max(1000),
  token: z.string().max(160).optional(),
});

export type ResumeStatus = z.infer<typeof ResumeStatusSchema>;
export type AuditEntry = z.infer<typeof AuditEntrySchema>;

/** What a resume request says when it is made (CLI, console, a forge comment), in either mode. */
export interface NewResumeRequest {
  token: string;
  by: string;
  episodes?: number;
}

/** A person's request to resume a task; `error` when it could not be read (still handled once, and said why). */
export interface ResumeRequest {
  token: string;
  by: string;
  /** More episodes granted on top of limits.maxEpisodes. */
  episodes?: number;
  error?: string;
}

export const RESUME_ANNOTATION = 'episodic.dev/resume';
export const RESUME_EPISODES_ANNOTATION = 'episodic.dev/resume-episodes';
export const RESUME_BY_ANNOTATION = 'episodic.dev/resume-by';
/** Most episodes one resume request grants: `episodic resume --episodes`, the console, `/episodic resume N`. */
export const MAX_GRANT = 10_000;

/** The one rule for a person's resume (CLI, console, a forge comment, the pass that handles it): NeedsReview only. */
export function canResume(phase: string | undefined): boolean {
  return phase === 'NeedsReview';
}

/** Why a task cannot be resumed by a person (only a NeedsReview task can), or undefined when it can. */
export function resumeRefusal(key: string, phase: string | undefined, reason: string | undefined): string | undefined {
  if (canResume(phase)) return undefined;
  return `${key} is ${phase ?? 'Pending'}${reason ? ` (${reason})` : ''}: only a NeedsReview task can be resumed`;
}

const TOKEN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/**
 * Reads a request from untrusted text (annotations, a request file). `where` names the fields in errors.
 * Undefined when there is no token at all. A token that is not one is shortened, so it is still handled once.
 */
export function parseResumeRequest(
  raw: { token?: unknown; by?: unknown; episodes?: unknown },
  where: { token: string; episodes: string; by: string },
): ResumeRequest | undefined {
  if (raw.token === undefined || raw.token === null || raw.token === '') return undefined;
  const text = typeof raw.token === 'string' ? raw.token : (JSON.stringify(raw.token) ?? '');
  if (!TOKEN.test(text)) {
    return {
      token: clip(text, REFUSED_TOKEN_MAX),
      by: 'unknown',
      error: `${where.token}: must be 1-128 letters, digits, ".", "_", ":" or "-"`,
    };
  }
  const by = requester(raw.by);
  if (raw.episodes === undefined || raw.episodes === null || raw.episodes === '') return { token: text, by };
  const episodes =
    typeof raw.episodes === 'number'
      ? raw.episodes
      : typeof raw.episodes === 'string' && /^\d+$/.test(raw.episodes)
        ? Number(raw.episodes)
        : NaN;
  if (!Number.isInteger(episodes) || episodes < 1 || episodes > MAX_GRANT) {
    return {
      token: text,
      by,
      error: `${where.episodes}: must be a whole number from 1 to ${MAX_GRANT}, got ${clip(JSON.stringify(raw.episodes) ?? 'undefined', QUOTED_VALUE_MAX)}`,
    };
  }
  return { token: text, by, episodes };
}

/** A request as a cluster carries it: the merge-patch annotations (null removes a grant an earlier request left). */
export function resumeAnnotations(request: NewResumeRequest): Record<string, string | null> {
  return {
    [RESUME_ANNOTATION]: request.token,
    [RESUME_BY_ANNOTATION]: request.by,
    [RESUME_EPISODES_ANNOTATION]: request.episodes === undefined ? null : String(request.episodes),
  };
}

/** The request a task's annotations carry (`kubectl annotate` works too); undefined when there is no token. */
export function resumeRequestOfAnnotations(annotations: Record<string, string> | undefined): ResumeRequest | undefined {
  const token = annotations?.[RESUME_ANNOTATION];
  if (token === undefined) return undefined;
  const where = {
    token: `annotation ${RESUME_ANNOTATION}`,
    episodes: `annotation ${RESUME_EPISODES_ANNOTATION}`,
    by: `annotation ${RESUME_BY_ANNOTATION}`,
  };
  const by = annotations?.[RESUME_BY_ANNOTATION] ?? 'annotation';
  return parseResumeRequest({ token, by, episodes: annotations?.[RESUME_EPISODES_ANNOTATION] }, where);
}
