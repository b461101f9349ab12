// Error classes for a FAILED episode (non-zero exit or agent-reported error); a successful run that talks
// about "429" in prose is not classified at all. Failing to start the agent is judged here; everything the
// agent printed is judged by its CLI's table of rules (claude-rules.ts, codex-rules.ts, gemini-rules.ts), or
// by generic-rules.ts for other agents.
import type { ErrorClass } from '../../api/episode-result.ts';
import { CLAUDE_RULES, claudeEvidence } from './claude-rules.ts';
import { CODEX_RULES, codexEvidence } from './codex-rules.ts';
import type { JsonFormat } from './format-reader.ts';
import { GEMINI_RULES, geminiEvidence } from './gemini-rules.ts';
import { GENERIC_RULES, genericEvidence } from './generic-rules.ts';
import { judge, type Evidence, type FailureOutput, type Rule, type Verdict } from './rules.ts';
import type { ProcessExit } from './types.ts';

export type { Verdict } from './rules.ts';

// E2BIG: a prompt too long for argv (promptVia: argument) fails the same way every episode.
const FATAL_SPAWN_CODES = new Set(['ENOENT', 'EACCES', 'ENOTDIR', 'EPERM', 'E2BIG']);
// Our side failed, not the agent: fork hit a process or memory limit for a moment, or the state disk had no
// room for the prompt file (the controller waits for room; a full disk never fails a task).
const TRANSIENT_SPAWN_CODES = new Set(['EAGAIN', 'ENOMEM', 'ENOSPC', 'EDQUOT', 'EFBIG']);

export const TABLES: Record<JsonFormat | 'generic', { rules: readonly Rule[] }> = {
  claude: { rules: CLAUDE_RULES },
  codex: { rules: CODEX_RULES },
  gemini: { rules: GEMINI_RULES },
  generic: { rules: GENERIC_RULES },
};

export interface FailureInput extends FailureOutput {
  exit: ProcessExit;
  /** Which CLI printed it (the spec's output, or the detected format); undefined: unknown agent. */
  cli: JsonFormat | undefined;
  /** Whether the output was plain text (no JSON events recognised). */
  textFormat: boolean;
  now: Date;
  timeZone?: string;
}

export function evidenceFor(input: FailureInput): Evidence {
  if (input.cli === 'claude') return claudeEvidence(input);
  if (input.cli === 'codex') return codexEvidence(input);
  if (input.cli === 'gemini') return geminiEvidence(input);
  return genericEvidence(input, input.textFormat);
}

export function classifyFailure(input: FailureInput): Verdict {
  const { exit } = input;
  const spawnMessage = exit.spawnErrorMessage ?? `cannot start agent: ${exit.spawnErrorCode}`;
  if (exit.spawnErrorCode !== undefined && FATAL_SPAWN_CODES.has(exit.spawnErrorCode)) {
    return { errorClass: 'fatal', rule: 'spawn', message: spawnMessage };
  }
  if (exit.spawnErrorCode !== undefined && TRANSIENT_SPAWN_CODES.has(exit.spawnErrorCode)) {
    return { errorClass: 'transient', rule: 'spawn', message: spawnMessage };
  }
  const evidence = evidenceFor(input);
  // 126/127: a shell wrapper could not execute or find the agent command.
  if (exit.exitCode === 126 || exit.exitCode === 127) {
    const line = /[^\n]*(?:command not found|permission denied|not found)[^\n]*/i.exec(evidence.text)?.[0];
    return { errorClass: 'fatal', rule: 'exit-126-127', message: evidence.message ?? line?.trim() };
  }
  if (exit.spawnErrorMessage) evidence.text = `${exit.spawnErrorMessage}\n${evidence.text}`;
  const ctx = { now: input.now, timeZone: input.timeZone };
  const verdict = judge(TABLES[input.cli ?? 'generic'].rules, evidence, ctx);
  // A CLI's table knows its wordings; what it does not know (a wrapper script, a crash) gets the generic
  // wordings, over the same bounded evidence.
  return verdict.rule === undefined && input.cli !== undefined ? judge(GENERIC_RULES, evidence, ctx) : verdict;
}

/** For callers that only have texts (tests, the runner's git steps): the generic table. */
export function classifyText(
  texts: string[],
  statuses: number[],
  now: Date,
  timeZone?: string,
): { errorClass: ErrorClass; resetAt?: string; evidence?: string } {
  const evidence: Evidence = {
    exitCode: 1,
    status: statuses.find((s) => [400, 401, 403, 404].includes(s)) ?? statuses[0],
    kinds: new Set(),
    text: texts.join('\n'),
  };
  const verdict = judge(GENERIC_RULES, evidence, { now, timeZone });
  return { errorClass: verdict.errorClass, resetAt: verdict.resetAt, evidence: verdict.message };
}
