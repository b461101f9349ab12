// Local mode's created tasks: one spec document per task under STATE/created/NAMESPACE/NAME.yaml, never in
// the user's spec directory. The controller reads them with the spec directory (user's tasks win a name
// clash), so they run, show in `episodic get` and are deleted like any task. A document is made by a hard
// link of a finished temporary file: it appears whole or not at all, and never overwrites one (idempotent).
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createFileOnce } from '../../util/atomic-write.ts';
import { createdDir, createdSpecPath } from '../../util/state-layout.ts';
import { CreatedTaskStore, ownerOf } from '../../core/created-tasks.ts';
import type { CreatedManifest, CreatedTask, CreateOutcome, TaskOwner } from '../../core/created-tasks.ts';
import { isSpecFileName, parseSpecText } from './spec-files.ts';
import type { LoadedSpecs, ParsedFile, SpecTask } from './spec-files.ts';

/** The annotation naming the file a created spec's relative paths resolve against (its owner's). */
export const SPEC_FILE_ANNOTATION = 'episodic.dev/spec-file';

export interface LocalCreatedTasksOptions {
  stateDir: string;
  /** Whether a task of the user's spec directory has this name: a created task never shadows one. */
  userTask?: (namespace: string, name: string) => boolean;
  /** Called after a document was added or removed: the controller reads the created tasks again. */
  onChange?: () => void;
}

export class LocalCreatedTasks extends CreatedTaskStore {
  private readonly opts: LocalCreatedTasksOptions;

  constructor(opts: LocalCreatedTasksOptions) {
    super();
    this.opts = opts;
  }

  protected override refuse(owner: TaskOwner, name: string): string | undefined {
    return this.opts.userTask?.(owner.namespace, name) ? 'a task of the spec directory has it' : undefined;
  }

  protected async write(owner: TaskOwner, manifest: CreatedManifest): Promise<CreateOutcome> {
    if (owner.file) manifest.metadata.annotations = { [SPEC_FILE_ANNOTATION]: owner.file };
    const { name } = manifest.metadata;
    const file = createdSpecPath(this.opts.stateDir, owner.namespace, name);
    if (createFileOnce(file, `${JSON.stringify(manifest, null, 2)}\n`) === 'exists') return { result: 'exists' };
    parseCreated(file); // read once now: the trigger's next pass lists it unparsed
    this.opts.onChange?.();
    return { result: 'created' };
  }

  protected async ownerOfExisting(namespace: string, name: string): Promise<CreatedTask['owner'] | undefined> {
    return this.read(namespace, name)?.owner;
  }

  async list(owner: TaskOwner): Promise<CreatedTask[]> {
    return this.all(owner.namespace).filter(
      (t) => t.owner.kind === owner.kind && t.owner.name === owner.name && t.namespace === owner.namespace,
    );
  }

  protected async remove(namespace: string, name: string): Promise<boolean> {
    const file = createdSpecPath(this.opts.stateDir, namespace, name);
    if (!existsSync(file)) return false;
    rmSync(file, { force: true });
    return true;
  }

  protected override removed(): void {
    this.opts.onChange?.();
  }

  private all(namespace: string): CreatedTask[] {
    const dir = join(createdDir(this.opts.stateDir), namespace);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter(isSpecFileName)
      .flatMap((f) => this.read(namespace, f.replace(/\.ya?ml$/, '')) ?? []);
  }

  private read(namespace: string, name: string): CreatedTask | undefined {
    const task = parseCreated(createdSpecPath(this.opts.stateDir, namespace, name))?.tasks[0];
    const owner = ownerOf(task?.labels);
    if (!task || !owner) return undefined;
    const spec = (task.manifest.spec ?? {}) as Record<string, unknown>;
    return { namespace: task.namespace, name: task.name, owner, labels: task.labels ?? {}, spec };
  }
}

/** Parsed documents by file, with the stat they were read at: a created document is written once, never edited. */
const parsedFiles = new Map<string, { stamp: string; parsed: ParsedFile }>();

/**
 * A created document parsed as a spec file is, or undefined when it is gone. Parsing was the cost of an idle
 * trigger pass (YAML and spec validation, ~0.6 ms a document): a file whose stat did not change is not parsed again.
 */
function parseCreated(file: string): ParsedFile | undefined {
  const stat = statSync(file, { throwIfNoEntry: false });
  if (!stat) {
    parsedFiles.delete(file);
    return undefined;
  }
  const stamp = `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  const known = parsedFiles.get(file);
  if (known?.stamp === stamp) return known.parsed;
  const parsed = parseSpecText(file, readFileSync(file, 'utf8'), { writtenAsJson: true });
  parsedFiles.set(file, { stamp, parsed });
  return parsed;
}

/** Every created task's spec document, parsed as a spec file is; a relative workspace resolves as its owner's. */
export function loadCreatedSpecs(stateDir: string): { tasks: SpecTask[]; errors: string[] } {
  const root = createdDir(stateDir);
  const out: { tasks: SpecTask[]; errors: string[] } = { tasks: [], errors: [] };
  if (!existsSync(root)) return out;
  for (const ns of readdirSync(root).sort()) {
    for (const f of readdirSync(join(root, ns)).filter(isSpecFileName).sort()) {
      const file = join(root, ns, f);
      const parsed = parseCreated(file);
      if (!parsed) continue;
      out.errors.push(...parsed.errors);
      for (const t of parsed.tasks) {
        const base = (t.manifest.metadata as { annotations?: Record<string, string> }).annotations?.[
          SPEC_FILE_ANNOTATION
        ];
        out.tasks.push({ ...t, file: base ?? file, created: true });
        out.errors.push(...t.errors);
      }
    }
  }
  return out;
}

/** The user's specs with the created tasks added; a created task whose name the user's specs have is left out. */
export function withCreatedTasks(loaded: LoadedSpecs, stateDir: string): LoadedSpecs {
  const created = loadCreatedSpecs(stateDir);
  if (created.tasks.length === 0 && created.errors.length === 0) return loaded;
  const tasks = new Map(loaded.tasks);
  const errors = [...loaded.errors, ...created.errors];
  for (const t of created.tasks) {
    if (tasks.has(t.key)) errors.push(`created task ${t.key} is also defined in ${tasks.get(t.key)?.file}; ignored`);
    else tasks.set(t.key, t);
  }
  return { ...loaded, tasks, errors };
}
