// Validation with messages a person can act on: "spec.agent.command: expected array, received undefined".
import type { z } from 'zod';
import { AgentTaskSpecSchema, MetadataSchema } from './agent-task.ts';
import type { AgentTaskSpec } from './agent-task.ts';

export function formatIssuePath(path: ReadonlyArray<PropertyKey>, prefix: string): string {
  let out = prefix;
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : `${out ? '.' : ''}${String(part)}`;
  return out || '(root)';
}

/** One line per problem, each naming the field. */
export function describeIssues(error: z.ZodError, prefix: string): string[] {
  return error.issues.map((issue) => `${formatIssuePath(issue.path, prefix)}: ${issue.message}`);
}

export type SpecValidation = { ok: true; spec: AgentTaskSpec } | { ok: false; errors: string[] };

/** Validates and defaults a spec as written by a user (locally or on the cluster). */
export function validateSpec(raw: unknown): SpecValidation {
  const parsed = AgentTaskSpecSchema.safeParse(raw ?? {});
  return parsed.success ? { ok: true, spec: parsed.data } : { ok: false, errors: describeIssues(parsed.error, 'spec') };
}

export function validateMetadata(raw: unknown): { ok: true; name: string; namespace: string } | { ok: false; errors: string[] } {
  const parsed = MetadataSchema.safeParse(raw ?? {});
  if (!parsed.success) return { ok: false, errors: describeIssues(parsed.error, 'metadata') };
  return { ok: true, name: parsed.data.name, namespace: parsed.data.namespace };
}
