// Validation with messages a person can act on: "spec.agent.command: expected array, received undefined".
import type { z } from 'zod';
import { AgentTaskSpecSchema, AgentTaskStatusSchema, MetadataSchema } from './agent-task.ts';
import type { AgentTaskSpec } from './agent-task.ts';

export function formatIssuePath(path: ReadonlyArray<PropertyKey>, prefix: string): string {
  let out = prefix;
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : `${out ? '.' : ''}${String(part)}`;
  return out || '(root)';
}

/** One line per problem, each naming the field; an unknown field says which known one it may mean. */
export function describeIssues(error: z.ZodError, prefix: string, schema?: z.ZodType): string[] {
  return error.issues.flatMap((issue) => {
    if (issue.code !== 'unrecognized_keys') return [`${formatIssuePath(issue.path, prefix)}: ${issue.message}`];
    const known = schema ? knownKeys(schema, issue.path) : [];
    return issue.keys.map((key) => {
      const near = closest(key, known);
      return `${formatIssuePath([...issue.path, key], prefix)}: unknown field${near ? ` (did you mean "${near}"?)` : ''}`;
    });
  });
}

/** The fields an object in `schema` at `path` accepts (through defaults, optionals, arrays and unions). */
export function knownKeys(schema: z.ZodType, path: ReadonlyArray<PropertyKey>): string[] {
  return [...new Set(shapesAt(schema, path).flatMap((shape) => Object.keys(shape)))];
}

/** What shapesAt reads of a zod schema's internal definition. */
interface ZodDef {
  type?: string;
  shape?: Record<string, unknown>;
  element?: unknown;
  options?: unknown[];
  in?: unknown;
  innerType?: unknown;
}

function shapesAt(node: unknown, path: ReadonlyArray<PropertyKey>): Array<Record<string, unknown>> {
  const def = (node as { _zod?: { def?: ZodDef } } | undefined)?._zod?.def;
  if (!def) return [];
  const [head, ...rest] = path;
  switch (def.type) {
    case 'object':
      if (path.length === 0) return def.shape ? [def.shape] : [];
      return typeof head === 'string' && def.shape?.[head] ? shapesAt(def.shape[head], rest) : [];
    case 'array':
      return typeof head === 'number' ? shapesAt(def.element, rest) : [];
    case 'union':
      return (def.options ?? []).flatMap((option) => shapesAt(option, path));
    case 'pipe':
      return shapesAt(def.in, path);
    default:
      return def.innerType ? shapesAt(def.innerType, path) : [];
  }
}

/** The known key a typo most likely meant, if any is close enough. */
export function closest(key: string, known: string[]): string | undefined {
  let best: { key: string; d: number } | undefined;
  for (const k of known) {
    const [a, b] = [key.toLowerCase(), k.toLowerCase()];
    // Same letters in another case, a shortened name ("noProgress"), or a couple of typed-wrong letters.
    const d = a === b ? 0 : a.length >= 4 && (b.startsWith(a) || a.startsWith(b)) ? 1 : editDistance(a, b);
    if (d <= Math.max(2, Math.floor(k.length / 4)) && (!best || d < best.d)) best = { key: k, d };
  }
  return best?.key;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const next = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = row[j];
      row[j] = next;
    }
  }
  return row[b.length];
}

export type SpecValidation = { ok: true; spec: AgentTaskSpec } | { ok: false; errors: string[] };

/** Validates and defaults a spec as written by a user (locally or on the cluster). */
export function validateSpec(raw: unknown): SpecValidation {
  const parsed = AgentTaskSpecSchema.safeParse(raw ?? {});
  return parsed.success
    ? { ok: true, spec: parsed.data }
    : { ok: false, errors: describeIssues(parsed.error, 'spec', AgentTaskSpecSchema) };
}

export function validateMetadata(
  raw: unknown,
): { ok: true; name: string; namespace: string } | { ok: false; errors: string[] } {
  const parsed = MetadataSchema.safeParse(raw ?? {});
  if (!parsed.success) return { ok: false, errors: describeIssues(parsed.error, 'metadata') };
  return { ok: true, name: parsed.data.name, namespace: parsed.data.namespace };
}

/** Problems of a status about to be written; a status that does not validate is never written. */
export function statusProblems(status: unknown): string[] {
  const parsed = AgentTaskStatusSchema.safeParse(status);
  return parsed.success ? [] : describeIssues(parsed.error, 'status');
}
