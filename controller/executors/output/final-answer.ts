// What an agent's final answer says beyond the sentinel: the answer without copies of the prompt, the fields
// of its last RALPH_STATUS block, and completion keywords. Raw facts; the reconciler scores them.
import { RALPH_FIELD_MAX } from '../../api/bounds.ts';
import type { RalphStatus } from '../../api/leash.ts';
import { withoutEchoedSignals, withoutPromptEcho } from './prompt-echo.ts';
import { promisePattern } from './text.ts';

export { withoutPromptEcho } from './prompt-echo.ts';

const STATUS_START = '---RALPH_STATUS---';
const STATUS_END = '---END_RALPH_STATUS---';

function statusField(block: string, name: string): string | undefined {
  const match = new RegExp(`^\\s*\\**${name}\\**\\s*:\\s*\\**\\s*([^\\n*]*)`, 'im').exec(block);
  const value = match?.[1]?.trim();
  return value ? value.slice(0, RALPH_FIELD_MAX) : undefined;
}

function statusCount(block: string, name: string): number | undefined {
  const value = statusField(block, name);
  return value !== undefined && /^\d{1,9}\b/.test(value) ? Number.parseInt(value, 10) : undefined;
}

/** The fields of the LAST RALPH_STATUS block (earlier ones are superseded); undefined when there is none. */
export function ralphStatus(text: string | undefined): RalphStatus | undefined {
  if (!text) return undefined;
  const start = text.lastIndexOf(STATUS_START);
  if (start === -1) return undefined;
  const end = text.indexOf(STATUS_END, start);
  const block = text.slice(start + STATUS_START.length, end === -1 ? undefined : end);
  const exit = statusField(block, 'EXIT_SIGNAL');
  const status: RalphStatus = {
    status: statusField(block, 'STATUS'),
    exitSignal: exit === undefined ? undefined : /^true\b/i.test(exit),
    tasksCompleted: statusCount(block, 'TASKS_COMPLETED_THIS_LOOP'),
    filesModified: statusCount(block, 'FILES_MODIFIED'),
    testsStatus: statusField(block, 'TESTS_STATUS'),
    workType: statusField(block, 'WORK_TYPE'),
  };
  for (const key of Object.keys(status) as (keyof RalphStatus)[]) if (status[key] === undefined) delete status[key];
  return status;
}

/**
 * Phrases that say the whole job is done (Gluon's keyword signal, narrowed to phrases: a bare "done" is
 * also said of one step). Matched case-insensitively in the final answer; each found phrase counts once.
 */
export const COMPLETION_KEYWORDS: readonly { phrase: string; pattern: RegExp }[] = [
  { phrase: 'all tasks complete', pattern: /\ball (?:the )?tasks (?:are )?(?:now )?complete(?:d)?\b/i },
  { phrase: 'task is complete', pattern: /\b(?:the )?task is (?:now )?(?:fully )?complete\b/i },
  { phrase: 'nothing left to do', pattern: /\bnothing (?:left|more|else) to do\b/i },
  { phrase: 'all done', pattern: /\ball done\b/i },
];

export function completionKeywords(text: string | undefined): string[] {
  if (!text) return [];
  return COMPLETION_KEYWORDS.filter((k) => k.pattern.test(text)).map((k) => k.phrase);
}

const STATUS_BLOCK = /---RALPH_STATUS---[\s\S]*?(?:---END_RALPH_STATUS---|$)/;

/**
 * The answer as signals are read from it: whole echoes of the prompt cut out (plain text; `cutAtStart` for
 * a tail that may start inside one), and every signal (the sentinel, a status block, a completion phrase)
 * that stands inside a copy of the prompt's words around it blanked.
 */
export function answerWithoutPrompt(
  text: string | undefined,
  prompt: string | undefined,
  promise: string,
  cutAtStart = false,
): string | undefined {
  if (text === undefined) return undefined;
  // The sentinel first: the work on signals is bounded, and it is the one that ends a task alone.
  const signals = promise.trim() === '' ? [] : [promisePattern(promise)];
  signals.push(STATUS_BLOCK, ...COMPLETION_KEYWORDS.map((k) => k.pattern));
  return withoutEchoedSignals(withoutPromptEcho(text, prompt, cutAtStart), prompt, signals);
}
