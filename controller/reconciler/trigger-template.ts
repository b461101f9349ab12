// A trigger's template becomes a task spec. Item text is untrusted (anyone can open an issue): it is
// bounded and filled into prompts only — prompt and steps[].prompt — never into argv, env names or values,
// paths, labels or the task's name, which come from the template and the item's number alone.
import { posix } from 'node:path';
import type { AgentTaskSpec } from '../api/agent-task.ts';
import { ITEM_TEXT_MAX } from '../api/agent-trigger.ts';
import { clipPrompt } from '../api/bounds.ts';
import type { ForgeComment, ForgeItem } from '../api/forge-item.ts';

export interface TemplateVars {
  item?: ForgeItem;
  comment?: ForgeComment;
  /** Schedules: the tick, ISO 8601. */
  tick?: string;
}

const PLACEHOLDER = /\{\{\s*(item\.[a-z]+|tick)\s*\}\}/g;

function bounded(text: string, max: number): string {
  // NUL and other C0 controls (but tab/newline) have no place in a prompt; a terminal may act on them.
  const clean = text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '');
  return clipPrompt(clean, max);
}

export function templateValues(vars: TemplateVars): Record<string, string> {
  const out: Record<string, string> = {};
  if (vars.tick) out.tick = vars.tick;
  const item = vars.item;
  if (item) {
    out['item.number'] = String(item.number);
    out['item.title'] = bounded(item.title, ITEM_TEXT_MAX.title);
    out['item.body'] = bounded(item.body, ITEM_TEXT_MAX.body);
    out['item.url'] = bounded(item.url, ITEM_TEXT_MAX.url);
    out['item.author'] = bounded(item.author, ITEM_TEXT_MAX.author);
    out['item.labels'] = bounded(item.labels.join(', '), ITEM_TEXT_MAX.labels);
    out['item.comment'] = bounded(vars.comment?.body ?? '', ITEM_TEXT_MAX.comment);
  }
  return out;
}

/** One pass: a value that itself holds "{{item.body}}" is not expanded again; unknown placeholders stay. */
export function fillPrompt(prompt: string, values: Record<string, string>): string {
  return prompt.replace(PLACEHOLDER, (whole, key: string) => (Object.hasOwn(values, key) ? values[key] : whole));
}

/** The task spec for one item or tick: a deep copy of the template with its prompts filled, nothing else. */
export function renderTaskSpec(template: AgentTaskSpec, vars: TemplateVars): Record<string, unknown> {
  const values = templateValues(vars);
  const spec = structuredClone(template) as AgentTaskSpec;
  if (spec.prompt !== undefined) spec.prompt = fillPrompt(spec.prompt, values);
  for (const step of spec.steps ?? []) if (step.prompt !== undefined) step.prompt = fillPrompt(step.prompt, values);
  return spec as unknown as Record<string, unknown>;
}

/** An argv entry written as a path relative to its file: ./x or ../x (a bare word stays a program name or an argument). */
const RELATIVE = /^\.\.?\//;

/**
 * Locally, a template's argv paths written relative (./agent.mjs, ../agents/x.mjs) are relative to the
 * trigger's file, as a reader of that file expects; a created task runs elsewhere (its workspace under the
 * state dir), so they are made absolute against `dir` (absolute). Agent, verify and gate commands alike.
 */
export function commandPathsFrom(template: AgentTaskSpec, dir: string): AgentTaskSpec {
  const fix = (argv: string[] | undefined) => argv?.map((a) => (RELATIVE.test(a) ? posix.resolve(dir, a) : a));
  const spec = structuredClone(template);
  spec.agent.command = fix(spec.agent.command) ?? spec.agent.command;
  if (spec.completion.verify) spec.completion.verify = fix(spec.completion.verify);
  for (const step of spec.steps ?? []) {
    if (step.agent?.command) step.agent.command = fix(step.agent.command);
    if (step.completion?.verify) step.completion.verify = fix(step.completion.verify);
    for (const gate of step.gates ?? []) {
      gate.check = fix(gate.check) ?? gate.check;
      if (gate.fix) gate.fix = fix(gate.fix);
    }
  }
  return spec;
}
