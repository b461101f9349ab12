// Fills the per-episode placeholders of a task's prompt. Unknown {{placeholders}} are left untouched so a
// prompt can talk about templates (or a later stage can fill them) without us mangling it; output references
// ({{steps.NAME.outputs.KEY}}, {{tasks.NAME.outputs.KEY}}) are the exception: one not published renders empty.
import { lookupOutput } from '../api/outputs.ts';
import type { OutputScope } from '../api/outputs.ts';

export interface PromptVars {
  task: string;
  /** 1-based. */
  episode: number;
  maxEpisodes: number;
  /** Message of the previous episode; empty on the first one. */
  lastEpisodeMessage?: string;
  /** spec.steps: the step the episode runs in ({{step.name}}, {{step.index}}); left as written without one. */
  step?: { name: string; index: number };
  /** A fix episode: the gate whose check failed and the tail of its output ({{gate.name}}, {{gate.output}}). */
  gate?: { name: string; output: string };
  /** Outputs the prompt may read: earlier steps' and the dependencies'. */
  outputs?: OutputScope;
  /** Agent ops: {{frame}}, {{stack.depth}}, {{vars.NAME}} of a stack task's top frame, {{bb.KEY}} of the blackboard; {{children}}, {{messages}} of spawn and send. */
  more?: Readonly<Record<string, string>>;
}

/** What a fix episode's prompt gets after the step's prompt when that prompt says nothing of {{gate.…}}. */
export const GATE_SECTION = [
  '',
  '---',
  'The gate "{{gate.name}}" checked your work and failed. The end of its output:',
  '',
  '```',
  '{{gate.output}}',
  '```',
  '',
  'Fix what it reports. The step is done once the gate passes.',
  '',
].join('\n');

const GATE_PLACEHOLDER = /\{\{\s*gate\./;

// Step and task names have dashes (and task names dots): {{steps.run-tests.outputs.KEY}}.
const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g;

/** The placeholders a template names, each once (e.g. to say which of them had no value). */
export function placeholdersIn(template: string): Set<string> {
  return new Set(Array.from(template.matchAll(PLACEHOLDER), (m) => m[1] as string));
}

export function renderPrompt(given: string, vars: PromptVars): string {
  return renderPromptNoting(given, vars).prompt;
}

/** The prompt, and the output references in it that nothing published (rendered empty), each named once. */
export function renderPromptNoting(given: string, vars: PromptVars): { prompt: string; unknown: string[] } {
  // A fix episode: the step's prompt, and the gate's section unless the prompt places {{gate.…}} itself.
  const template = vars.gate && !GATE_PLACEHOLDER.test(given) ? `${given}\n${GATE_SECTION}` : given;
  const values: Record<string, string> = {
    task: vars.task,
    episode: String(vars.episode),
    maxEpisodes: String(vars.maxEpisodes),
    'lastEpisode.message': vars.lastEpisodeMessage ?? '',
    ...(vars.step ? { 'step.name': vars.step.name, 'step.index': String(vars.step.index) } : {}),
    ...(vars.gate ? { 'gate.name': vars.gate.name, 'gate.output': vars.gate.output } : {}),
    ...vars.more,
  };
  const unknown = new Set<string>();
  // One pass with a replacer: a value that itself contains "{{task}}" is not expanded again.
  const prompt = template.replace(PLACEHOLDER, (whole, key: string) => {
    if (Object.hasOwn(values, key)) return values[key];
    const output = lookupOutput(key, vars.outputs ?? {});
    if (!output) return whole;
    if (!output.known) unknown.add(key);
    return output.value;
  });
  return { prompt, unknown: [...unknown] };
}
