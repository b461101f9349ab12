// Outputs: short KEY=VALUE facts an episode publishes for the next step's prompt ({{steps.NAME.outputs.KEY}})
// and for dependent tasks ({{tasks.NAME.outputs.KEY}}). Published by `<output name="KEY">VALUE</output>` in
// the final answer or through the file $EPISODIC_OUTPUTS names. Values are untrusted agent text: they are
// only ever rendered into prompts, verbatim, never into argv, env names or paths. Everything here is pure.
import {
  clip,
  OUTPUT_KEY_MAX,
  OUTPUT_VALUE_MAX_BYTES,
  OUTPUTS_MAX_KEYS,
  OUTPUTS_NOTE_MAX,
  OUTPUTS_TOTAL_MAX_BYTES,
} from './bounds.ts';

/** The environment variable naming the file an episode may write its outputs to. */
export const OUTPUTS_ENV = 'EPISODIC_OUTPUTS';

export type Outputs = Record<string, string>;
export type OutputPair = readonly [key: string, value: string];

const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** More tags or lines than this are not read at all: bounded work on hostile output. */
const MAX_RAW_PAIRS = 256;
const TAG = /<output\s+name\s*=\s*(["'])([^"'<>]{0,200})\1\s*>([\s\S]*?)<\/output\s*>/g;

/** `<output name="KEY">VALUE</output>` tags in a final answer, in order; the value without surrounding whitespace. */
export function outputTags(text: string | undefined): OutputPair[] {
  if (!text?.includes('<output')) return [];
  const pairs: OutputPair[] = [];
  for (const m of text.matchAll(TAG)) {
    if (pairs.length >= MAX_RAW_PAIRS) break;
    pairs.push([m[2], m[3].trim()]);
  }
  return pairs;
}

/** The outputs file: one JSON object, or KEY=VALUE lines (blank lines and # comments skipped). */
export function parseOutputsFile(text: string): { pairs: OutputPair[]; problems: string[] } {
  const body = text.replace(/^\uFEFF/, '');
  if (body.trimStart().startsWith('{')) return parseJsonObject(body);
  const pairs: OutputPair[] = [];
  const problems: string[] = [];
  const lines = body.split(/\r?\n/);
  for (let i = 0; i < lines.length && pairs.length < MAX_RAW_PAIRS; i++) {
    const line = lines[i];
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) problems.push(`line ${i + 1} of $${OUTPUTS_ENV} is not KEY=VALUE`);
    else pairs.push([line.slice(0, eq).trim(), line.slice(eq + 1)]);
  }
  return { pairs, problems };
}

function parseJsonObject(body: string): { pairs: OutputPair[]; problems: string[] } {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return { pairs: [], problems: [`$${OUTPUTS_ENV} is not valid JSON`] };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { pairs: [], problems: [`$${OUTPUTS_ENV} is not one JSON object`] };
  const pairs = Object.entries(value)
    .slice(0, MAX_RAW_PAIRS)
    .map(([k, v]): OutputPair => [k, typeof v === 'string' ? v : JSON.stringify(v)]);
  return { pairs, problems: [] };
}

function bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Why a key cannot be an output key; undefined when it can. `__proto__` would vanish in a JS object. */
function badKey(key: string): string | undefined {
  if (key.length > OUTPUT_KEY_MAX) return `key longer than ${OUTPUT_KEY_MAX} characters`;
  if (!KEY.test(key)) return 'not a C identifier';
  if (key === '__proto__') return 'reserved';
  return undefined;
}

/** How a dropped key is named in a note: printable and short, whatever the agent wrote. */
function shown(key: string): string {
  return JSON.stringify(clip(key, 40));
}

/**
 * One episode's outputs within the bounds: a later value of a key replaces an earlier one; a bad key, a value
 * over OUTPUT_VALUE_MAX_BYTES, keys past OUTPUTS_MAX_KEYS and past OUTPUTS_TOTAL_MAX_BYTES (keys and values) are
 * dropped, each named in the note, and the rest kept. NUL, which no env var or argv can carry, becomes U+FFFD.
 */
export function boundOutputs(
  pairs: readonly OutputPair[],
  problems: readonly string[] = [],
): { outputs?: Outputs; dropped: string[] } {
  const latest = new Map<string, string>();
  for (const [key, value] of pairs) latest.set(key, value.replaceAll('\0', '\uFFFD'));
  const kept: Array<[string, string]> = [];
  const dropped = [...problems];
  let total = 0;
  for (const [key, value] of latest) {
    const why =
      badKey(key) ??
      (bytes(value) > OUTPUT_VALUE_MAX_BYTES
        ? `value of ${bytes(value)} bytes > ${OUTPUT_VALUE_MAX_BYTES}`
        : undefined) ??
      (kept.length >= OUTPUTS_MAX_KEYS ? `more than ${OUTPUTS_MAX_KEYS} keys` : undefined) ??
      (total + bytes(key) + bytes(value) > OUTPUTS_TOTAL_MAX_BYTES
        ? `over ${OUTPUTS_TOTAL_MAX_BYTES} bytes in all`
        : undefined);
    if (why) {
      dropped.push(`${shown(key)} (${why})`);
      continue;
    }
    kept.push([key, value]);
    total += bytes(key) + bytes(value);
  }
  return { outputs: kept.length > 0 ? Object.fromEntries(kept) : undefined, dropped };
}

/** What went missing, for the episode record: dropped outputs and references that rendered empty. */
export function outputsNote(dropped: readonly string[], unknown: readonly string[] = []): string | undefined {
  const parts: string[] = [];
  if (dropped.length > 0) parts.push(`outputs dropped: ${dropped.join(', ')}`);
  if (unknown.length > 0) parts.push(`unknown outputs rendered empty: ${unknown.join(', ')}`);
  return parts.length > 0 ? clip(parts.join('; '), OUTPUTS_NOTE_MAX) : undefined;
}

/** Both notes of one episode, e.g. its prompt's unknown references and its own dropped outputs. */
export function joinNotes(...notes: Array<string | undefined>): string | undefined {
  const present = notes.filter((n): n is string => n !== undefined && n !== '');
  return present.length > 0 ? clip(present.join('; '), OUTPUTS_NOTE_MAX) : undefined;
}

/** The outputs a prompt may read: earlier steps' of this task, and those of the tasks it depends on. */
export interface OutputScope {
  steps?: Record<string, Outputs | undefined>;
  /** {{steps.NAME.items}} of forEach steps. */
  items?: Record<string, string | undefined>;
  tasks?: Record<string, Outputs | undefined>;
}

/** The scope of an episode's prompt: every step's outputs on its task's status, and the dependencies'. */
export function outputScope(
  steps: ReadonlyArray<{ name: string; outputs?: Outputs; items?: string }> | undefined,
  tasks: Record<string, Outputs | undefined> | undefined,
): OutputScope {
  const byStep = Object.fromEntries((steps ?? []).filter((s) => s.outputs).map((s) => [s.name, s.outputs]));
  const items = Object.fromEntries((steps ?? []).filter((s) => s.items).map((s) => [s.name, s.items]));
  return { steps: byStep, tasks: { ...tasks }, ...(Object.keys(items).length > 0 ? { items } : {}) };
}

const REFERENCE = /^(steps|tasks)\.(.+)\.outputs\.([A-Za-z_][A-Za-z0-9_]*)$/;
const ITEMS = /^steps\.(.+)\.items$/;

/**
 * A placeholder's value when it names an output: the value, or '' and `known: false` for one not published
 * (or a task not in dependsOn); undefined when the placeholder is not an output reference.
 */
export function lookupOutput(placeholder: string, scope: OutputScope): { value: string; known: boolean } | undefined {
  const items = ITEMS.exec(placeholder);
  if (items) {
    const value = scope.items && Object.hasOwn(scope.items, items[1]) ? scope.items[items[1]] : undefined;
    return { value: value ?? '', known: value !== undefined };
  }
  const m = REFERENCE.exec(placeholder);
  if (!m) return undefined;
  const [, kind, name, key] = m;
  const byName = kind === 'steps' ? scope.steps : scope.tasks;
  const outputs = byName && Object.hasOwn(byName, name) ? byName[name] : undefined;
  if (outputs && Object.hasOwn(outputs, key)) return { value: outputs[key], known: true };
  return { value: '', known: false };
}

/**
 * `next` published after `prev`: the latest value per key, the keys just published last, and at most
 * `maxKeys` keys and `maxBytes` (keys and values) kept, the least recently published going first.
 */
export function mergeOutputs(
  prev: Outputs | undefined,
  next: Outputs | undefined,
  maxKeys: number,
  maxBytes: number,
): Outputs | undefined {
  if (!next || Object.keys(next).length === 0) return prev;
  const merged = new Map(Object.entries(prev ?? {}));
  for (const [key, value] of Object.entries(next)) {
    merged.delete(key);
    merged.set(key, value);
  }
  let total = 0;
  for (const [key, value] of merged) total += bytes(key) + bytes(value);
  for (const [key, value] of merged) {
    if (merged.size <= maxKeys && total <= maxBytes) break;
    merged.delete(key);
    total -= bytes(key) + bytes(value);
  }
  return Object.fromEntries(merged);
}

/** The prompt's unknown output references, named in the episode's outputs note before its own. */
export function withPromptNote<R extends { outputsNote?: string }>(result: R, note: string | undefined): R {
  return note ? { ...result, outputsNote: joinNotes(note, result.outputsNote) } : result;
}
