// The rules of skipWhen and scope (README "skipWhen", "Scope"), pure functions of facts. The executor (a local
// process, or the runner in the episode pod) gathers the facts and applies the first two before and after the
// agent, since only it sees the workspace; the reconciler records what the result says with the rest.
import picomatch from 'picomatch';
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import { clip, EPISODE_MESSAGE_MAX } from '../api/bounds.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import type { ChecklistCounts } from '../api/leash.ts';
import type { Scope, SkipWhen } from '../api/scope.ts';
import { REPORTED_PATH_MAX, SCOPE_PATHS_REPORTED, SCOPE_UNRESTORED_REPORTED } from '../api/scope.ts';

/** What the executor saw of a skipWhen path: whether it exists, and a plan file's counts. */
export interface SkipWhenFacts {
  exists: boolean;
  checklist?: ChecklistCounts;
}

/** Items neither done, failed nor skipped: `[ ]` pending and `[~]` in progress (prd.json: stories not passing). */
export function pendingItems(c: ChecklistCounts): number {
  return Math.max(0, c.total - c.done - c.failed - c.skipped);
}

/** Why the step is skipped, or undefined when it runs. */
export function skipWhenVerdict(skipWhen: SkipWhen | undefined, facts: SkipWhenFacts): string | undefined {
  if (!skipWhen) return undefined;
  if (skipWhen.fileExists !== undefined) return facts.exists ? `${skipWhen.fileExists} exists` : undefined;
  const plan = skipWhen.checklistPending as string;
  const pending = facts.exists && facts.checklist ? pendingItems(facts.checklist) : 0;
  return pending > 0 ? `${plan} has ${pending} pending item${pending === 1 ? '' : 's'}` : undefined;
}

/** The path skipWhen looks at. */
export function skipWhenPath(skipWhen: SkipWhen): string {
  return (skipWhen.checklistPending ?? skipWhen.fileExists) as string;
}

/** Always allowed whatever the scope says: the plan file, DISCOVERY.md, IDEAS.md (and the outputs file). */
export const ALWAYS_IN_SCOPE = ['DISCOVERY.md', 'IDEAS.md'];

/** The paths that are always allowed for a task: ALWAYS_IN_SCOPE, the plan file and any extra (outputs). */
export function alwaysAllowed(spec: AgentTaskSpec, extra: readonly string[] = []): string[] {
  const plan = spec.progress.checklist;
  return [...ALWAYS_IN_SCOPE, ...(plan ? [plan] : []), ...extra].map(normalise);
}

/** "./a//b" → "a/b": paths from git and from a directory walk compare as written in the spec. */
export function normalise(path: string): string {
  return path
    .replace(/\\/g, '/')
    .replace(/\/+/g, '/')
    .replace(/^(\.\/)+/, '');
}

/** The changed paths outside `scope.paths`, sorted; dotfiles match like any other name. */
export function scopeViolations(changed: readonly string[], scope: Scope, allowed: readonly string[]): string[] {
  const inScope = picomatch(scope.paths.map(normalise), { dot: true });
  const free = new Set(allowed.map(normalise));
  return [...new Set(changed.map(normalise))].filter((p) => p !== '' && !free.has(p) && !inScope(p)).sort();
}

/** The current step's skipWhen. */
export function effectiveSkipWhen(spec: AgentTaskSpec, status: AgentTaskStatus | undefined): SkipWhen | undefined {
  if (!status?.step) return spec.steps?.[0]?.skipWhen;
  return spec.steps?.find((s) => s.name === status.step?.name)?.skipWhen;
}

/** The result's scope facts from the violations and what a revert managed (`unrestored`: paths it could not). */
export function scopeFacts(
  scope: Scope,
  violations: readonly string[],
  unrestored: readonly string[] = [],
): NonNullable<EpisodeResult['scope']> | undefined {
  if (violations.length === 0) return undefined;
  const first = (paths: readonly string[], n = SCOPE_PATHS_REPORTED) =>
    paths.slice(0, n).map((p) => clip(p, REPORTED_PATH_MAX));
  const reverting = scope.onViolation === 'Revert';
  return {
    onViolation: scope.onViolation,
    count: violations.length,
    paths: first(violations),
    reverted: reverting ? violations.length - unrestored.length : 0,
    ...(reverting && unrestored.length > 0
      ? { unrestored: first(unrestored, SCOPE_UNRESTORED_REPORTED), unrestoredCount: unrestored.length }
      : {}),
  };
}

/** "a, b, c (+2 more)". */
export function pathList(paths: readonly string[], count: number): string {
  const more = count - paths.length;
  return `${paths.join(', ')}${more > 0 ? ` (+${more} more)` : ''}`;
}

/**
 * What a scope violation does to the task: NeedsReview (OutOfScope) for onViolation NeedsReview, and for a
 * Revert that could not restore everything; undefined when nothing is left outside the scope.
 */
export function scopeStop(
  result: EpisodeResult,
  episode: number,
): { reason: 'OutOfScope'; message: string } | undefined {
  const s = result.scope;
  if (!s) return undefined;
  if (s.onViolation === 'NeedsReview')
    return {
      reason: 'OutOfScope',
      message: `episode ${episode} changed ${s.count} path${s.count === 1 ? '' : 's'} outside scope.paths: ${pathList(s.paths, s.count)}`,
    };
  if (!s.unrestored?.length) return undefined;
  const n = s.unrestoredCount ?? s.unrestored.length;
  return {
    reason: 'OutOfScope',
    message: `episode ${episode} changed paths outside scope.paths that could not be restored: ${pathList(s.unrestored, n)}`,
  };
}

/**
 * A reverted episode counts as no progress: its workspace change, plan file and completion claims are not
 * evidence (its in-scope work stays in the workspace for the next episode to finish and claim).
 */
export function withoutProgress(result: EpisodeResult): EpisodeResult {
  if (result.scope?.onViolation !== 'Revert') return result;
  const { checklist: _c, completionKeywords: _k, ...evidence } = result.evidence ?? {};
  const workspace = evidence.workspace && { ...evidence.workspace, changed: false };
  const ralph = evidence.ralph && { ...evidence.ralph, exitSignal: undefined };
  const note = `reverted ${result.scope.reverted} path${result.scope.reverted === 1 ? '' : 's'} outside scope.paths (${pathList(result.scope.paths, result.scope.count)}); no progress`;
  return {
    ...result,
    completion: undefined,
    message: clip(result.message ? `${note}; ${result.message}` : note, EPISODE_MESSAGE_MAX),
    evidence: { ...evidence, ...(workspace ? { workspace } : {}), ...(ralph ? { ralph } : {}) },
  };
}

/** The completion rule a reverted episode is judged by: exit 0 alone or a signals score cannot finish it. */
export function completionWithoutProgress(
  completion: AgentTaskSpec['completion'],
  result: EpisodeResult,
): AgentTaskSpec['completion'] {
  if (result.scope?.onViolation !== 'Revert') return completion;
  return { ...completion, onExitZero: false, signals: undefined };
}
