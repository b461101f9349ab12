// What the stand-in agents of examples/pipelines share: the prompt on stdin, and an answer printed as Claude
// Code's real stream-json events (init, one assistant message, the result). No network, no model.
import { readFileSync, writeFileSync } from 'node:fs';

export function readPrompt() {
  return readFileSync(0, 'utf8');
}

/** One line of the prompt after `label:` (a value the task's template put there from another's outputs). */
export function field(prompt, label) {
  return new RegExp(`^${label}:[ \\t]*(.*)$`, 'm').exec(prompt)?.[1]?.trim() ?? '';
}

/** KEY=VALUE lines into the file $EPISODIC_OUTPUTS names: the outputs of this episode. */
export function publish(outputs) {
  const lines = Object.entries(outputs).map(([k, v]) => `${k}=${v}\n`);
  writeFileSync(process.env.EPISODIC_OUTPUTS, lines.join(''));
}

export function answer(text, costUSD = 0.004) {
  const session = `${process.env.EPISODIC_TASK}-${process.env.EPISODIC_EPISODE}`;
  const emit = (event) => process.stdout.write(`${JSON.stringify({ ...event, session_id: session })}\n`);
  const usage = { input_tokens: 900, output_tokens: 60, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
  emit({ type: 'system', subtype: 'init', model: 'stand-in', cwd: process.cwd(), tools: ['Read', 'Edit'] });
  emit({ type: 'assistant', message: { id: 'msg', role: 'assistant', content: [{ type: 'text', text }], usage } });
  emit({ type: 'result', subtype: 'success', is_error: false, result: text, total_cost_usd: costUSD, usage });
}
