// `episodic validate FILE|DIR...`: exit 0 when every AgentTask is valid, 2 with one line per error.
import { readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { loadSpecDir, mergeParsed, parseSpecText, refusedSpecFile } from '../sources/local/spec-files.ts';
import type { ParsedFile } from '../sources/local/spec-files.ts';
import { checkSpecSet } from '../sources/local/spec-checks.ts';
import { printable } from '../util/printable.ts';

export function registerValidate(program: Command): void {
  program
    .command('validate')
    .description('check AgentTask, AgentBudget, AgentTrigger and AgentCredentials files without running anything')
    .argument('<paths...>', 'YAML files or spec directories')
    .action(async (files: string[]) => {
      process.exitCode = await validateCommand(files);
    });
}

export async function validateCommand(args: string[]): Promise<number> {
  const errors: string[] = [];
  const warnings: string[] = [];
  const files: string[] = [];
  const parsed: ParsedFile[] = [];
  let tasks = 0;
  let budgets = 0;
  let triggers = 0;
  let credentials = 0;
  for (const arg of args) {
    let text: string;
    try {
      // A directory is read exactly as `episodic run DIR` reads it.
      if ((await stat(arg)).isDirectory()) {
        const loaded = await loadSpecDir(arg);
        errors.push(...loaded.errors);
        const checked = checkSpecSet(loaded.tasks.values(), () => arg, loaded.credentials?.values());
        errors.push(...checked.errors);
        warnings.push(...checked.warnings);
        tasks += loaded.tasks.size;
        budgets += loaded.budgets.size;
        triggers += loaded.triggers?.size ?? 0;
        credentials += loaded.credentials?.size ?? 0;
        if (loaded.files.length === 0) errors.push(`${arg}: no *.yaml or *.yml files in this directory`);
        continue;
      }
      const refused = refusedSpecFile(arg);
      if (refused) {
        errors.push(refused);
        continue;
      }
      text = await readFile(arg, 'utf8');
    } catch (err) {
      errors.push(
        `${arg}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`,
      );
      continue;
    }
    const one = parseSpecText(arg, text);
    const kinds =
      one.tasks.length + (one.budgets?.length ?? 0) + (one.triggers?.length ?? 0) + (one.credentials?.length ?? 0);
    if (kinds === 0 && one.errors.length === 0)
      errors.push(`${arg}: no AgentTask, AgentBudget, AgentTrigger or AgentCredentials in this file`);
    files.push(arg);
    parsed.push(one);
  }
  // The files given are merged as one directory would be: a name defined twice is an error, here as in run.
  const merged = mergeParsed(files, parsed);
  errors.push(...merged.errors);
  // A file given alone is its own spec directory: its workspaces stay beside it.
  const checked = checkSpecSet(merged.tasks.values(), (t) => dirname(t.file), merged.credentials?.values());
  errors.push(...checked.errors);
  warnings.push(...checked.warnings);
  tasks += merged.tasks.size;
  budgets += merged.budgets.size;
  triggers += merged.triggers?.size ?? 0;
  credentials += merged.credentials?.size ?? 0;
  // Errors quote what the files hold: escaped and bounded, one line each.
  for (const w of warnings) console.error(`warning: ${printable(w)}`);
  for (const e of errors) console.error(printable(e));
  if (errors.length > 0) return 2;
  console.log(
    `${[count(tasks, 'AgentTask'), count(budgets, 'AgentBudget', true), count(triggers, 'AgentTrigger', true), count(credentials, 'AgentCredentials', true)].filter(Boolean).join(', ')} valid`,
  );
  return 0;
}

/** "2 AgentTasks"; an optional kind with none is left out. */
function count(n: number, kind: string, optional = false): string {
  return optional && n === 0 ? '' : `${n} ${kind}${n === 1 || kind.endsWith('s') ? '' : 's'}`;
}
