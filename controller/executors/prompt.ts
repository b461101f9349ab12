// Fills the per-episode placeholders of a task's prompt. Unknown {{placeholders}} are left untouched so a
// prompt can talk about templates (or a later stage can fill them) without us mangling it.

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

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}/g;

export function renderPrompt(given: string, vars: PromptVars): string {
  // A fix episode: the step's prompt, and the gate's section unless the prompt places {{gate.…}} itself.
  const template = vars.gate && !GATE_PLACEHOLDER.test(given) ? `${given}\n${GATE_SECTION}` : given;
  const values: Record<string, string> = {
    task: vars.task,
    episode: String(vars.episode),
    maxEpisodes: String(vars.maxEpisodes),
    'lastEpisode.message': vars.lastEpisodeMessage ?? '',
    ...(vars.step ? { 'step.name': vars.step.name, 'step.index': String(vars.step.index) } : {}),
    ...(vars.gate ? { 'gate.name': vars.gate.name, 'gate.output': vars.gate.output } : {}),
  };
  // One pass with a replacer: a value that itself contains "{{task}}" is not expanded again.
  return template.replace(PLACEHOLDER, (whole, key: string) => (Object.hasOwn(values, key) ? values[key] : whole));
}
