// What an agent's final answer says beyond the sentinel: an echo of the prompt removed from plain text,
// the fields of its last RALPH_STATUS block, and completion keywords. Raw facts; the reconciler scores them.
import type { RalphStatus } from '../../api/leash.ts';
import { stripAnsi } from './rules.ts';

/** Prompt lines beyond this are not compared (a prompt this long is not echoed into a 64 KiB tail whole). */
const MAX_PROMPT_LINES = 4000;

function promptLines(prompt: string): string[] {
  return prompt
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .slice(-MAX_PROMPT_LINES);
}

/** KMP failure table over lines. */
function failureTable(pattern: string[]): number[] {
  const fail = new Array<number>(pattern.length).fill(0);
  for (let i = 1, k = 0; i < pattern.length; i++) {
    while (k > 0 && pattern[i] !== pattern[k]) k = fail[k - 1] as number;
    if (pattern[i] === pattern[k]) k++;
    fail[i] = k;
  }
  return fail;
}

/**
 * Plain-text output without echoes of the prompt. An echo is the WHOLE prompt, line for line (lines
 * trimmed, blank lines ignored), so a CLI that prints the prompt back cannot fake the sentinel the prompt
 * asks for, while an answer that repeats one line of it (the agent printing `<promise>DONE</promise>` as
 * told) still counts. `cutAtStart`: the text is a tail whose start may lie inside an echo, so its first
 * (possibly partial) line is dropped and leading lines equal to the prompt's last lines are removed too.
 */
export function withoutPromptEcho(text: string, prompt: string | undefined, cutAtStart = false): string {
  const pattern = prompt ? promptLines(prompt) : [];
  if (pattern.length === 0) return cutAtStart ? text.slice(text.indexOf('\n') + 1) : text;
  const raw = text.split('\n');
  const drop = new Array<boolean>(raw.length).fill(false);
  if (cutAtStart) drop[0] = true;
  const lines: number[] = []; // indexes of the non-blank lines we compare
  for (let i = cutAtStart ? 1 : 0; i < raw.length; i++) if (stripAnsi(raw[i] as string).trim() !== '') lines.push(i);
  const norm = (i: number): string => stripAnsi(raw[lines[i] as number] as string).trim();

  const fail = failureTable(pattern);
  for (let i = 0, k = 0; i < lines.length; i++) {
    while (k > 0 && norm(i) !== pattern[k]) k = fail[k - 1] as number;
    if (norm(i) === pattern[k]) k++;
    if (k === pattern.length) {
      for (let j = lines[i - k + 1] as number; j <= (lines[i] as number); j++) drop[j] = true; // blank lines inside too
      k = 0;
    }
  }
  if (cutAtStart) {
    for (let len = Math.min(pattern.length - 1, lines.length); len > 0; len--) {
      const from = pattern.length - len;
      let same = true;
      for (let j = 0; j < len && same; j++) same = norm(j) === pattern[from + j];
      if (same) {
        for (let j = 0; j < len; j++) drop[lines[j] as number] = true;
        break;
      }
    }
  }
  return raw.filter((_, i) => !drop[i]).join('\n');
}

const STATUS_START = '---RALPH_STATUS---';
const STATUS_END = '---END_RALPH_STATUS---';

function statusField(block: string, name: string): string | undefined {
  const match = new RegExp(`^\\s*\\**${name}\\**\\s*:\\s*\\**\\s*([^\\n*]*)`, 'im').exec(block);
  const value = match?.[1]?.trim();
  return value ? value.slice(0, 64) : undefined;
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
