// `episodic validate FILE...`: exit 0 when every AgentTask is valid, 2 with one line per error.
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { parseSpecText } from '../sources/local/spec-files.ts';

export function registerValidate(program: Command): void {
  program
    .command('validate')
    .description('check AgentTask and AgentBudget files without running anything')
    .argument('<files...>', 'YAML files')
    .action(async (files: string[]) => {
      process.exitCode = await validateCommand(files);
    });
}

export async function validateCommand(files: string[]): Promise<number> {
  const errors: string[] = [];
  let tasks = 0;
  let budgets = 0;
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      errors.push(`${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
      continue;
    }
    const parsed = parseSpecText(file, text);
    errors.push(...parsed.errors);
    for (const t of parsed.tasks) errors.push(...t.errors);
    for (const b of parsed.budgets ?? []) errors.push(...b.errors);
    tasks += parsed.tasks.length;
    budgets += parsed.budgets?.length ?? 0;
    if (parsed.tasks.length === 0 && !parsed.budgets?.length && parsed.errors.length === 0) errors.push(`${file}: no AgentTask or AgentBudget in this file`);
  }
  for (const e of errors) console.error(e);
  if (errors.length > 0) return 2;
  console.log(`${tasks} AgentTask${tasks === 1 ? '' : 's'}${budgets > 0 ? `, ${budgets} AgentBudget${budgets === 1 ? '' : 's'}` : ''} valid`);
  return 0;
}
