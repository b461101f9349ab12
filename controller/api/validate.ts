// Validation with messages a person can act on: "spec.agent.command: expected array, received undefined".
import type { z } from 'zod';
import { AgentTaskSpecSchema, AgentTaskStatusSchema, MetadataSchema } from './agent-task.ts';
import type { AgentTaskSpec } from './agent-task.ts';
import { splitWords } from './argv-words.ts';
import { clip } from './bounds.ts';
import { closest } from './validate-words.ts';

export function formatIssuePath(path: ReadonlyArray<PropertyKey>, prefix: string): string {
  let out = prefix;
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : `${out ? '.' : ''}${String(part)}`;
  return out || '(root)';
}

/**
 * One line per problem, each naming the field; an unknown field says which known one it may mean, and a
 * string where a list belongs (given `raw`, the input) how to write it as one.
 */
export function describeIssues(error: z.ZodError, prefix: string, schema?: z.ZodType, raw?: unknown): string[] {
  return error.issues.flatMap((issue) => {
    if (issue.code !== 'unrecognized_keys')
      return [`${formatIssuePath(issue.path, prefix)}: ${issue.message}${listHint(issue, raw)}`];
    const known = schema ? knownKeys(schema, issue.path) : [];
    return issue.keys.map((key) => {
      const near = closest(key, known);
      return `${formatIssuePath([...issue.path, key], prefix)}: unknown field${near ? ` (did you mean "${near}"?)` : ''}`;
    });
  });
}

/** Fields that hold argv: a string given there is split into words for the hint. */
const ARGV_FIELDS = new Set(['command', 'check', 'fix', 'verify']);

/** "; give it as a list: [\"npm\",\"test\"]" for a string where a list is expected; '' otherwise. */
export function listHint(issue: z.core.$ZodIssue, raw: unknown): string {
  if (issue.code !== 'invalid_type' || issue.expected !== 'array') return '';
  const value = valueAt(raw, issue.path);
  if (typeof value !== 'string') return '';
  const argv = ARGV_FIELDS.has(String(issue.path.at(-1)));
  const list = argv ? splitWords(value) : [value];
  return `; give it as a list: ${clip(JSON.stringify(list), HINT_MAX)}`;
}

const HINT_MAX = 200;

function valueAt(raw: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let node = raw;
  for (const part of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[part];
  }
  return node;
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

export type SpecValidation = { ok: true; spec: AgentTaskSpec } | { ok: false; errors: string[] };

/** Validates and defaults a spec as written by a user (locally or on the cluster). */
export function validateSpec(raw: unknown): SpecValidation {
  const parsed = AgentTaskSpecSchema.safeParse(raw ?? {});
  return parsed.success
    ? { ok: true, spec: parsed.data }
    : { ok: false, errors: describeIssues(parsed.error, 'spec', AgentTaskSpecSchema, raw ?? {}) };
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
