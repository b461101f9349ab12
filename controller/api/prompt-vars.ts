// Agent ops' placeholders ({{bb.KEY}}, {{children}}, {{messages}}) in a promptFile on a cluster: the controller
// has the facts, only the pod has the file. So the controller hands the pod the rendered values in
// EPISODIC_PROMPT_VARS (JSON, next to EPISODIC_PROMPT), and the runner renders the file with them through the
// same renderPrompt a local episode uses. The values are data: one pass, never expanded again.
import { z } from 'zod';
import { BLACKBOARD_KEY_MAX, BLACKBOARD_KEYS_MAX } from './bounds.ts';

export const EPISODE_PROMPT_VARS_ENV = 'EPISODIC_PROMPT_VARS';
/**
 * Bytes of the values' JSON. Linux takes one environment string of at most 128 KiB (MAX_ARG_STRLEN); the
 * names of dropped keys add at most PROMPT_VARS_DROPPED_MAX_BYTES, so the whole stays under it.
 */
export const PROMPT_VARS_MAX_BYTES = 96 * 1024;
export const PROMPT_VARS_DROPPED_MAX_BYTES = BLACKBOARD_KEYS_MAX * (BLACKBOARD_KEY_MAX + 6);

export const PodPromptVarsSchema = z.object({
  vars: z.record(z.string(), z.string()),
  /** Blackboard placeholders left out past the bound: a promptFile naming one renders it empty, with a note. */
  dropped: z.array(z.string()).optional(),
});
export type PodPromptVars = z.infer<typeof PodPromptVarsSchema>;

const isBlackboard = (name: string) => name.startsWith('bb.');

/**
 * The values a pod gets: all but the blackboard's always ({{messages}} an episode is given must reach it:
 * they are acknowledged after it; the mailbox and {{children}} have their own bounds), then blackboard keys
 * in name order while they fit in `maxBytes`; the rest are named in `dropped`.
 */
export function podPromptVars(more: Readonly<Record<string, string>>, maxBytes = PROMPT_VARS_MAX_BYTES): PodPromptVars {
  const entries = Object.entries(more).sort(
    ([a], [b]) => Number(isBlackboard(a)) - Number(isBlackboard(b)) || cmp(a, b),
  );
  const vars: Record<string, string> = {};
  const dropped: string[] = [];
  let used = 2; // {}
  for (const [name, value] of entries) {
    const size = jsonBytes(name) + jsonBytes(value) + 2; // : and ,
    if (isBlackboard(name) && used + size > maxBytes) dropped.push(name);
    else {
      vars[name] = value;
      used += size;
    }
  }
  return dropped.length > 0 ? { vars, dropped } : { vars };
}

function jsonBytes(text: string): number {
  return Buffer.byteLength(JSON.stringify(text));
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
