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
}

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}/g;

export function renderPrompt(template: string, vars: PromptVars): string {
  const values: Record<string, string> = {
    task: vars.task,
    episode: String(vars.episode),
    maxEpisodes: String(vars.maxEpisodes),
    'lastEpisode.message': vars.lastEpisodeMessage ?? '',
    ...(vars.step ? { 'step.name': vars.step.name, 'step.index': String(vars.step.index) } : {}),
  };
  // One pass with a replacer: a value that itself contains "{{task}}" is not expanded again.
  return template.replace(PLACEHOLDER, (whole, key: string) => (Object.hasOwn(values, key) ? values[key] : whole));
}
