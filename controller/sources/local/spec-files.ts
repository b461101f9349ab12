// Desired state from a directory of Kubernetes YAML: every AgentTask document in DIR/*.yaml|*.yml
// (top level only, like `kubectl apply -f DIR`). Spec files are read, never written.
import { closeSync, fstatSync, lstatSync, openSync, readFileSync, realpathSync, statSync } from 'node:fs';
import type { Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { isInside } from '../../util/paths.ts';
import { API_VERSION, KIND, taskKey } from '../../api/agent-task.ts';
import type { AgentTaskSpec } from '../../api/agent-task.ts';
import { validateMetadata, validateSpec } from '../../api/validate.ts';
import { closest } from '../../api/validate-words.ts';
import { BUDGET_KIND, validateBudgetSpec } from '../../api/agent-budget.ts';
import type { AgentBudgetSpec } from '../../api/agent-budget.ts';
import { TRIGGER_KIND, triggerNameProblem, validateTriggerSpec } from '../../api/agent-trigger.ts';
import type { AgentTriggerSpec } from '../../api/agent-trigger.ts';
import { yamlLib } from '../../util/yaml-lib.ts';
import { hashSpec } from '../../util/stable-hash.ts';

export { hashSpec };
import { CREDENTIALS_KIND } from '../../api/agent-credentials.ts';
import { credentialsDocument } from './credentials-files.ts';
import type { SpecCredentials } from './credentials-files.ts';

export type { SpecCredentials };

export interface SpecTask {
  key: string;
  namespace: string;
  name: string;
  file: string;
  /** The validated, defaulted spec; undefined when invalid (see errors). */
  spec?: AgentTaskSpec;
  errors: string[];
  /** Hash of the spec as written: a change bumps the local generation. */
  specHash: string;
  /** The manifest as written (for `episodic get -o yaml`). */
  manifest: Record<string, unknown>;
  /** metadata.labels: AgentBudget selectors match them. */
  labels?: Record<string, string>;
  /** A created task's document (under the state dir, created-tasks.ts): its default workspace is there too. */
  created?: boolean;
}

/** An AgentBudget document of the spec directory. */
export interface SpecBudget {
  key: string;
  namespace: string;
  name: string;
  file: string;
  spec?: AgentBudgetSpec;
  errors: string[];
  specHash: string;
}

/** An AgentTrigger document of the spec directory. */
export interface SpecTrigger {
  key: string;
  namespace: string;
  name: string;
  file: string;
  spec?: AgentTriggerSpec;
  errors: string[];
  specHash: string;
}

export interface ParsedFile {
  tasks: SpecTask[];
  /** Problems that keep a document from becoming a task at all (YAML syntax, missing name…). */
  errors: string[];
  /** Documents of other kinds, ignored. */
  ignored: string[];
  budgets?: SpecBudget[];
  triggers?: SpecTrigger[];
  credentials?: SpecCredentials[];
}

/** dependsOn as written, even when the spec is invalid: the dependents index and the cycle check need it. */
export function dependsOnAsWritten(t: Pick<SpecTask, 'spec' | 'manifest'>): string[] {
  const raw = (t.manifest.spec as { dependsOn?: unknown } | undefined)?.dependsOn;
  return t.spec?.dependsOn ?? (Array.isArray(raw) ? raw.filter((d): d is string => typeof d === 'string') : []);
}

export function isSpecFileName(name: string): boolean {
  return /\.ya?ml$/i.test(name) && !name.startsWith('.');
}

export function parseSpecText(file: string, text: string, opts: { writtenAsJson?: boolean } = {}): ParsedFile {
  const out: ParsedFile = { tasks: [], errors: [], ignored: [] };
  let docs: YamlDocument[];
  try {
    docs = (opts.writtenAsJson && jsonDocument(text)) || parseDocuments(text);
  } catch (err) {
    out.errors.push(`${file}: ${(err as Error).message}`);
    return out;
  }
  docs.forEach((doc, index) => {
    const where = docs.length > 1 ? `${file} (document ${index + 1})` : file;
    if (doc.errors.length > 0) {
      for (const e of doc.errors) out.errors.push(`${where}: YAML: ${e}`);
      return;
    }
    const value = doc.value;
    if (value === null || value === undefined) return; // empty document, e.g. a trailing "---"
    if (typeof value !== 'object' || Array.isArray(value)) {
      out.errors.push(`${where}: expected a Kubernetes object (a YAML mapping)`);
      return;
    }
    const manifest = value as Record<string, unknown>;
    if (manifest.kind === BUDGET_KIND) {
      parseBudget(manifest, where, file, out);
      return;
    }
    if (manifest.kind === TRIGGER_KIND) {
      parseTrigger(manifest, where, file, out);
      return;
    }
    if (manifest.kind === CREDENTIALS_KIND) {
      const meta = objectMetadata(manifest, where, out);
      if (meta)
        (out.credentials ??= []).push(credentialsDocument(meta, manifest, where, file, hashSpec(manifest.spec)));
      return;
    }
    if (manifest.kind !== KIND) {
      const problem = kindProblem(manifest);
      if (problem) out.errors.push(`${where}: ${problem}`);
      else out.ignored.push(`${where}: kind ${String(manifest.kind)}`);
      return;
    }
    const meta = objectMetadata(manifest, where, out);
    if (!meta) return;
    const label = `${where}: AgentTask ${meta.namespace}/${meta.name}`;
    const spec = validateSpec(manifest.spec);
    out.tasks.push({
      key: taskKey(meta.namespace, meta.name),
      namespace: meta.namespace,
      name: meta.name,
      file,
      spec: spec.ok ? spec.spec : undefined,
      errors: spec.ok ? [] : spec.errors.map((e) => `${label}: ${e}`),
      specHash: hashSpec(manifest.spec),
      manifest,
      labels: labelsOf(manifest),
    });
  });
  return out;
}

/** A document no Kubernetes tool would accept (no kind), or one of this API group with a kind it does not have. */
function kindProblem(manifest: Record<string, unknown>): string | undefined {
  const kind = manifest.kind;
  if (kind === undefined || kind === null || kind === '')
    return `kind: missing (expected ${KIND}, ${BUDGET_KIND}, ${TRIGGER_KIND} or ${CREDENTIALS_KIND}; a document of another kind is ignored)`;
  if (typeof kind !== 'string') return `kind: expected a string, got ${JSON.stringify(kind)}`;
  const group = API_VERSION.split('/')[0];
  if (typeof manifest.apiVersion === 'string' && manifest.apiVersion.startsWith(`${group}/`)) {
    const near = closest(kind, [KIND, BUDGET_KIND, TRIGGER_KIND, CREDENTIALS_KIND]);
    return `kind: ${group} has no kind "${kind}"${near ? ` (did you mean "${near}"?)` : ''}`;
  }
  return undefined;
}

function labelsOf(manifest: Record<string, unknown>): Record<string, string> | undefined {
  return (manifest.metadata as { labels?: Record<string, string> } | undefined)?.labels;
}

/** apiVersion and metadata, the same for every kind: the name and namespace, or undefined with the errors recorded. */
function objectMetadata(
  manifest: Record<string, unknown>,
  where: string,
  out: ParsedFile,
): { name: string; namespace: string } | undefined {
  if (manifest.apiVersion !== API_VERSION) {
    out.errors.push(`${where}: apiVersion: expected "${API_VERSION}", got "${String(manifest.apiVersion)}"`);
    return undefined;
  }
  const meta = validateMetadata(manifest.metadata);
  if (!meta.ok) {
    for (const e of meta.errors) out.errors.push(`${where}: ${e}`);
    return undefined;
  }
  return meta;
}

function parseBudget(manifest: Record<string, unknown>, where: string, file: string, out: ParsedFile): void {
  const meta = objectMetadata(manifest, where, out);
  if (!meta) return;
  const spec = validateBudgetSpec(manifest.spec);
  (out.budgets ??= []).push({
    key: taskKey(meta.namespace, meta.name),
    namespace: meta.namespace,
    name: meta.name,
    file,
    spec: spec.ok ? spec.spec : undefined,
    errors: spec.ok ? [] : spec.errors.map((e) => `${where}: AgentBudget ${meta.namespace}/${meta.name}: ${e}`),
    specHash: hashSpec(manifest.spec),
  });
}

function parseTrigger(manifest: Record<string, unknown>, where: string, file: string, out: ParsedFile): void {
  const meta = objectMetadata(manifest, where, out);
  if (!meta) return;
  const spec = validateTriggerSpec(manifest.spec);
  const label = `${where}: AgentTrigger ${meta.namespace}/${meta.name}`;
  const errors = [triggerNameProblem(meta.name), ...(spec.ok ? [] : spec.errors)].filter((e) => e !== undefined);
  (out.triggers ??= []).push({
    key: taskKey(meta.namespace, meta.name),
    namespace: meta.namespace,
    name: meta.name,
    file,
    spec: spec.ok && errors.length === 0 ? spec.spec : undefined,
    errors: errors.map((e) => `${label}: ${e}`),
    specHash: hashSpec(manifest.spec),
  });
}

interface YamlDocument {
  value?: unknown;
  errors: string[];
}

// Aliases let a 1 KB file expand to gigabytes ("billion laughs"); a spec needs few, if any.
const MAX_ALIAS_COUNT = 100;
/** Past this a file is not a spec: reading and parsing it must not stall the controller. */
export const MAX_SPEC_FILE_BYTES = 1024 * 1024;

/**
 * The documents of a YAML stream (YAML 1.2 core schema), each with its own errors: one broken document does
 * not take its siblings in the same file down with it. Alias bombs and self-referencing aliases are errors.
 */
function parseDocuments(text: string): YamlDocument[] {
  if (text.length > MAX_SPEC_FILE_BYTES) throw new Error(`larger than ${MAX_SPEC_FILE_BYTES} bytes; not a spec file`);
  return yamlLib()
    .parseAllDocuments(text, { prettyErrors: true, uniqueKeys: true })
    .map((doc) => {
      if (doc.errors.length > 0) return { errors: doc.errors.map((e) => e.message.split('\n')[0]) };
      try {
        const value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
        if (isCyclic(value)) return { errors: ['an alias refers to a node that contains it (a cycle)'] };
        return { value, errors: [] };
      } catch (err) {
        return { errors: [(err as Error).message.split('\n')[0]] };
      }
    });
}

/** A document the controller wrote with JSON.stringify (YAML's subset, ~10× faster to read), or undefined. */
function jsonDocument(text: string): YamlDocument[] | undefined {
  try {
    return [{ value: JSON.parse(text), errors: [] }];
  } catch {
    return undefined; // not ours after all: the YAML parser says what is wrong
  }
}

/** A value that contains itself, which only a recursive alias can make. */
function isCyclic(value: unknown, ancestors = new Set<unknown>()): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (ancestors.has(value)) return true;
  ancestors.add(value);
  for (const child of Object.values(value)) if (isCyclic(child, ancestors)) return true;
  ancestors.delete(value);
  return false;
}

export interface LoadedSpecs {
  tasks: Map<string, SpecTask>;
  budgets: Map<string, SpecBudget>;
  /** AgentTrigger documents (absent: none; older callers build LoadedSpecs without them). */
  triggers?: Map<string, SpecTrigger>;
  /** AgentCredentials documents (absent: none). */
  credentials?: Map<string, SpecCredentials>;
  /** All problems, one line each, naming file and field. */
  errors: string[];
  ignored: string[];
  files: string[];
  /** Per-file parse results, in the order of files (lets a watcher re-parse one file at a time). */
  parsed: ParsedFile[];
  /** File → fileStamp() of what was read (set by loadSpecDir): a watcher starting later re-reads only changed files. */
  stamps?: Map<string, string>;
}

/** mtime and size: what a file looked like when it was read. */
export function fileStamp(stats: { mtimeMs: number; size: number }): string {
  return `${stats.mtimeMs}:${stats.size}`;
}

/** Loads every spec file in dir. The first definition of a namespace/name wins; later ones are errors. */
export async function loadSpecDir(dir: string): Promise<LoadedSpecs> {
  const root = resolve(dir);
  const entries = await readdir(root, { withFileTypes: true });
  const rootReal = realpathSync.native(root);
  const kinds = entries
    .filter((e) => isSpecFileName(e.name))
    .map((e) => ({ path: join(root, e.name), kind: specFileKind(rootReal, root, e) }));
  const files = kinds
    .filter((k) => k.kind === 'file')
    .map((k) => k.path)
    .sort();
  const refused = kinds.filter((k) => k.kind === 'outside').map((k) => symlinkRefusal(k.path, root));
  // Read synchronously: parsing blocks anyway, and one readFile per file through the thread pool is slower for
  // thousands of small files and holds all their buffers at once.
  const stamps = new Map<string, string>();
  const parsed = files.map((f) => {
    const fd = openSync(f, 'r');
    try {
      const stats = fstatSync(fd);
      stamps.set(f, fileStamp(stats));
      if (stats.size > MAX_SPEC_FILE_BYTES)
        return { tasks: [], ignored: [], errors: [`${f}: larger than ${MAX_SPEC_FILE_BYTES} bytes; not a spec file`] };
      return parseSpecText(f, readFileSync(fd, 'utf8'));
    } finally {
      closeSync(fd);
    }
  });
  const merged = mergeParsed(files, parsed);
  return { ...merged, errors: [...refused.sort(), ...merged.errors], stamps };
}

/** The one message for a spec file that is a symlink leading out of its directory. */
export function symlinkRefusal(path: string, root: string): string {
  return `${path}: a symlink leading outside ${root}; not read`;
}

/** A spec file given by name that `run` would not read from its directory: a symlink leading out of it. */
export function refusedSpecFile(path: string): string | undefined {
  const root = resolve(dirname(path));
  try {
    if (!lstatSync(path).isSymbolicLink()) return undefined;
    return isInside(realpathSync.native(root), realpathSync.native(path)) ? undefined : symlinkRefusal(path, root);
  } catch {
    return undefined; // dangling or gone: reading it says so
  }
}

/**
 * A regular file, or a symlink to one inside DIR: how Kubernetes mounts a ConfigMap (task.yaml → ..data/task.yaml).
 * A link that leads out of DIR is not read, so a spec directory cannot be made to quote files from elsewhere.
 */
function specFileKind(rootReal: string, root: string, e: Dirent): 'file' | 'outside' | 'other' {
  if (e.isFile()) return 'file';
  if (!e.isSymbolicLink()) return 'other';
  try {
    const path = join(root, e.name);
    if (!statSync(path).isFile()) return 'other';
    return isInside(rootReal, realpathSync.native(path)) ? 'file' : 'outside';
  } catch {
    return 'other'; // dangling
  }
}

export function mergeParsed(files: string[], parsed: ParsedFile[]): LoadedSpecs {
  const triggers = new Map<string, SpecTrigger>();
  const credentials = new Map<string, SpecCredentials>();
  const out: LoadedSpecs = {
    tasks: new Map(),
    budgets: new Map(),
    triggers,
    credentials,
    errors: [],
    ignored: [],
    files,
    parsed,
  };
  for (const p of parsed) {
    out.errors.push(...p.errors);
    out.ignored.push(...p.ignored);
    for (const t of p.tasks) {
      const first = out.tasks.get(t.key);
      if (first) {
        out.errors.push(`${t.file}: AgentTask ${t.key} is already defined in ${first.file}; this copy is ignored`);
        continue;
      }
      out.tasks.set(t.key, t);
      out.errors.push(...t.errors);
    }
    mergeKind(out.budgets, p.budgets, 'AgentBudget', out.errors);
    mergeKind(triggers, p.triggers, 'AgentTrigger', out.errors);
    mergeKind(credentials, p.credentials, 'AgentCredentials', out.errors);
  }
  return out;
}

/** The first document of a kind under a key wins; a later copy is an error. */
function mergeKind<T extends { key: string; file: string; errors: string[] }>(
  into: Map<string, T>,
  items: readonly T[] | undefined,
  kind: string,
  errors: string[],
): void {
  for (const item of items ?? []) {
    const first = into.get(item.key);
    if (first) {
      errors.push(`${item.file}: ${kind} ${item.key} is already defined in ${first.file}; this copy is ignored`);
      continue;
    }
    into.set(item.key, item);
    errors.push(...item.errors);
  }
}
