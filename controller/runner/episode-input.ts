// What the controller hands the runner through the environment: the episode config (JSON, validated) and
// the rendered prompt. Everything wrong here is a configuration error: retrying cannot fix it.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { z } from 'zod';
import { EPISODE_CONFIG_ENV, EPISODE_PROMPT_ENV, EpisodeConfigSchema } from '../api/episode-config.ts';
import { placeholdersIn, renderPromptNoting } from '../executors/prompt.ts';
import { joinNotes, outputsNote } from '../api/outputs.ts';
import { EPISODE_PROMPT_VARS_ENV, PodPromptVarsSchema } from '../api/prompt-vars.ts';
import { isInside } from '../util/paths.ts';

export const RunnerConfigSchema = EpisodeConfigSchema;
export type RunnerConfig = z.infer<typeof RunnerConfigSchema>;

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

export function readEpisodeConfig(env: NodeJS.ProcessEnv): Parsed<RunnerConfig> {
  const raw = env[EPISODE_CONFIG_ENV];
  if (raw === undefined || raw.trim() === '') return { ok: false, message: `${EPISODE_CONFIG_ENV} is not set` };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    return { ok: false, message: `${EPISODE_CONFIG_ENV} is not valid JSON: ${(err as Error).message}` };
  }
  const parsed = RunnerConfigSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    return { ok: false, message: `invalid ${EPISODE_CONFIG_ENV}: ${issues.join('; ')}` };
  }
  if (parsed.data.promptFile === undefined && !env[EPISODE_PROMPT_ENV]) {
    return { ok: false, message: `${EPISODE_PROMPT_ENV} is not set and the config names no promptFile` };
  }
  return { ok: true, value: parsed.data };
}

/**
 * The prompt: rendered by the controller, or read from the workspace (after a clone) and rendered here; `note`
 * names output references either rendered empty.
 */
export async function readPrompt(
  config: RunnerConfig,
  env: NodeJS.ProcessEnv,
): Promise<Parsed<string> & { note?: string }> {
  if (config.promptFile === undefined)
    return { ok: true, value: env[EPISODE_PROMPT_ENV] ?? '', note: config.outputsNote };
  const file = path.resolve(config.workspaceDir, config.promptFile);
  if (!isInside(path.resolve(config.workspaceDir), file)) {
    return { ok: false, message: `promptFile ${config.promptFile} is outside the workspace` };
  }
  let template: string;
  try {
    template = await readFile(file, 'utf8');
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    return { ok: false, message: `cannot read promptFile ${config.promptFile} in the workspace: ${why}` };
  }
  const ops = readPodPromptVars(env);
  if (!ops.ok) return ops;
  const { prompt, unknown } = renderPromptNoting(template, {
    task: config.task,
    episode: config.episode,
    maxEpisodes: config.maxEpisodes,
    lastEpisodeMessage: config.lastEpisodeMessage,
    step: config.step,
    gate: config.gate,
    outputs: config.outputs,
    more: ops.value.more,
  });
  const named = placeholdersIn(template);
  const left = ops.value.dropped.filter((name) => named.has(name));
  const leftNote = left.length > 0 ? `over ${EPISODE_PROMPT_VARS_ENV}'s bound, rendered empty: ${left.join(', ')}` : '';
  return { ok: true, value: prompt, note: joinNotes(outputsNote([], unknown), leftNote) };
}

/** The ops' placeholders the controller rendered for a promptFile (api/prompt-vars.ts); dropped: empty. */
function readPodPromptVars(env: NodeJS.ProcessEnv): Parsed<{ more: Record<string, string>; dropped: string[] }> {
  const raw = env[EPISODE_PROMPT_VARS_ENV];
  if (raw === undefined) return { ok: true, value: { more: {}, dropped: [] } };
  let parsed: ReturnType<typeof PodPromptVarsSchema.safeParse>;
  try {
    parsed = PodPromptVarsSchema.safeParse(JSON.parse(raw));
  } catch (err) {
    return { ok: false, message: `${EPISODE_PROMPT_VARS_ENV} is not valid JSON: ${(err as Error).message}` };
  }
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    return { ok: false, message: `invalid ${EPISODE_PROMPT_VARS_ENV}: ${issues.join('; ')}` };
  }
  const dropped = parsed.data.dropped ?? [];
  return {
    ok: true,
    value: { more: { ...Object.fromEntries(dropped.map((n) => [n, ''])), ...parsed.data.vars }, dropped },
  };
}
