// Tasks whose pool of credentials is exhausted (issue 29 §3): when every credential of the AgentCredentials a
// task uses is paused by a usage limit, no episode starts into it: the task waits, CredentialsExhausted, until
// the earliest reset plus a jitter, so the tasks held together do not all start in the same instant. Pure: the
// loop says until when the pool is paused; the clock and the randomness are inputs.
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { normal } from './actions.ts';
import type { Events } from './actions.ts';

export const CREDENTIALS_EXHAUSTED = 'CredentialsExhausted';
/** Held tasks resume spread over this long after the reset. */
export const CREDENTIALS_RESUME_JITTER_MS = 30_000;

/** The loop's fact: the pool the task uses, and the earliest reset of its credentials (all are paused). */
export interface CredentialsPaused {
  credentials: string;
  until: Date;
}

export type CredentialsVerdict =
  | { kind: 'go'; status: AgentTaskStatus }
  | { kind: 'hold'; status: AgentTaskStatus; events: Events; requeueAfterMs: number };

export function credentialsHold(
  status: AgentTaskStatus,
  paused: CredentialsPaused | undefined,
  now: Date,
  jitter: number,
): CredentialsVerdict {
  const held = status.reason === CREDENTIALS_EXHAUSTED;
  const wakeAt = status.nextEpisodeAt ? Date.parse(status.nextEpisodeAt) : Number.NaN;
  if (!paused || paused.until <= now) {
    // A pool freed long before the reset it waited for (a credential added, a pause lifted) frees its tasks now;
    // inside the jitter after the reset the task keeps its own wake time.
    const early = held && wakeAt - now.getTime() > CREDENTIALS_RESUME_JITTER_MS;
    return { kind: 'go', status: early ? { ...status, nextEpisodeAt: undefined } : status };
  }
  const until = paused.until.getTime();
  // The wake time stays as drawn while the reset stays: a pass does not move it (nor rewrite the status).
  const kept = held && wakeAt >= until && wakeAt <= until + CREDENTIALS_RESUME_JITTER_MS;
  const wake = kept ? wakeAt : until + Math.floor(Math.min(Math.max(jitter, 0), 1) * CREDENTIALS_RESUME_JITTER_MS);
  const message = `every credential of AgentCredentials ${paused.credentials} is paused by a usage limit; the earliest reset is ${paused.until.toISOString()}`;
  return {
    kind: 'hold',
    status: {
      ...status,
      phase: 'Waiting',
      reason: CREDENTIALS_EXHAUSTED,
      message,
      nextEpisodeAt: new Date(wake).toISOString(),
    },
    events: held ? [] : [normal(CREDENTIALS_EXHAUSTED, message)],
    requeueAfterMs: Math.max(0, wake - now.getTime()),
  };
}
