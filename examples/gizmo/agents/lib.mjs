// What the stand-in agents of examples/gizmo share: the prompt the controller rendered (stdin, or the file
// $EPISODIC_PROMPT_FILE names), its task part, the op channel ($EPISODIC_OPS) and outputs
// ($EPISODIC_OUTPUTS). No network, no model: each agent decides from the words of its prompt alone.
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';

export function readPrompt() {
  if (process.env.EPISODIC_PROMPT_FILE) return readFileSync(process.env.EPISODIC_PROMPT_FILE, 'utf8');
  return readFileSync(0, 'utf8');
}

/** A stack episode's task: the prompt after its last "## Task" line (the frames below are context). */
export function taskPart(prompt) {
  const at = prompt.lastIndexOf('## Task\n');
  return (at < 0 ? prompt : prompt.slice(at + '## Task\n'.length)).trim();
}

/** One op for the controller to apply once the episode has ended. */
export function op(value) {
  appendFileSync(process.env.EPISODIC_OPS, `${JSON.stringify(value)}\n`);
}

/** KEY=VALUE lines into $EPISODIC_OUTPUTS: what this episode publishes (a parent reads them in {{children}}). */
export function publish(outputs) {
  const lines = Object.entries(outputs).map(([k, v]) => `${k}=${v}\n`);
  writeFileSync(process.env.EPISODIC_OUTPUTS, lines.join(''));
}

/** The final answer, as a text-output agent prints it. */
export function answer(text) {
  process.stdout.write(`${text}\n`);
}

/** The lines "- NAME: TEXT" of a block: the items a prompt lists. */
export function items(text) {
  return [...text.matchAll(/^- ([a-z0-9-]+): (.+)$/gm)].map((m) => ({ name: m[1], text: m[2].trim() }));
}
