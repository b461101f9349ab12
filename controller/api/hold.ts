// A suspend hold: a person's "stop this task" that is not spec. The controller never writes spec and the
// user's spec files are never modified, so the console and `episodic suspend` set this instead: an
// annotation on a cluster, a file in the state directory locally. The reconciler treats `spec.suspend ||
// hold` as suspended (reconciler/suspend.ts); lifting the hold cannot override spec.suspend: true.

import { BY_MAX, requester } from './bounds.ts';

export const SUSPENDED_ANNOTATION = 'episodic.dev/suspended';
export const SUSPENDED_BY_ANNOTATION = 'episodic.dev/suspended-by';

/** `suspended: false` is a lifted hold that still says who lifted it (for the audit trail). */
export interface SuspendHold {
  suspended: boolean;
  by: string;
}

/** Reads a hold from untrusted text (annotations, a state file); undefined when there is none. */
export function parseHold(suspended: unknown, by: unknown): SuspendHold | undefined {
  if (suspended === undefined || suspended === null || suspended === '') return undefined;
  const on = suspended === true || suspended === 'true';
  return { suspended: on, by: requester(by) };
}

/** The hold as annotations for a merge patch (both keys set: a lifted hold keeps who lifted it). */
export function holdAnnotations(hold: SuspendHold): Record<string, string> {
  return { [SUSPENDED_ANNOTATION]: String(hold.suspended), [SUSPENDED_BY_ANNOTATION]: hold.by.slice(0, BY_MAX) };
}

export function holdOfAnnotations(annotations: Record<string, string> | undefined): SuspendHold | undefined {
  return parseHold(annotations?.[SUSPENDED_ANNOTATION], annotations?.[SUSPENDED_BY_ANNOTATION]);
}
