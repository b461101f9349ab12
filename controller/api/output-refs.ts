// {{steps.NAME.outputs.KEY}} in a pipeline's prompts, checked before anything runs (issue 28): a reference to
// a step that is not in spec.steps is an error (it could only ever render empty); one to a key the named
// step's prompt never mentions, or to a step that runs later, is a warning (its agent may publish it anyway).
// Pure: the schema reports the errors (validate, run and the cluster alike), spec-checks.ts the warnings.
import { closest } from './validate-words.ts';

// Step names are RFC 1123 labels; keys C identifiers (api/outputs.ts).
const STEP_REF = /\{\{\s*steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
const ANY_PLACEHOLDER = /\{\{[^}]*\}\}/g;
/** How a prompt asks for a key: <output name="KEY"> or KEY=… (the $EPISODIC_OUTPUTS file). */
const ASKED = /name\s*=\s*["']([A-Za-z_][A-Za-z0-9_]*)["']|\b([A-Za-z_][A-Za-z0-9_]*)=/g;

export interface RefProblem {
  /** Under spec: ['steps', 1, 'prompt'] or ['prompt']. */
  path: Array<string | number>;
  message: string;
}

interface Prompted {
  name?: string;
  prompt?: string;
  promptFile?: string;
}

/** Problems of the output references in spec.prompt and each step's prompt. */
export function outputRefProblems(spec: { prompt?: string; steps?: readonly Prompted[] }): {
  errors: RefProblem[];
  warnings: RefProblem[];
} {
  const steps = spec.steps ?? [];
  const out = { errors: [] as RefProblem[], warnings: [] as RefProblem[] };
  const places: Array<{ path: Array<string | number>; text: string | undefined; index: number }> = [
    { path: ['prompt'], text: spec.prompt, index: -1 },
    ...steps.map((s, i) => ({ path: ['steps', i, 'prompt'], text: s.prompt, index: i })),
  ];
  const names = steps.map((s) => s.name ?? '');
  for (const { path, text, index } of places) {
    for (const [ref, step, key] of refsIn(text)) {
      const at = names.indexOf(step);
      if (at < 0) {
        const near = closest(step, names);
        const known = names.length > 0 ? `spec.steps has ${names.join(', ')}` : 'the task has no spec.steps';
        const hint = near ? `; did you mean "${near}"?` : '';
        out.errors.push({ path, message: `${ref}: no step "${step}" (${known})${hint}; it would render empty` });
      } else if (at > index && index >= 0) {
        out.warnings.push({
          path,
          message: `${ref}: step "${step}" runs after this one; its outputs are empty the first time this one runs`,
        });
      } else {
        const producer = steps[at] as Prompted;
        const asked = producer.prompt === undefined ? undefined : askedKeys(producer.prompt);
        if (asked && !asked.includes(key)) {
          const near = closest(key, asked);
          const hint = near ? `; did you mean ${near}?` : '';
          const message = `${ref}: step "${step}"'s prompt never asks for ${key} (<output name="${key}"> or ${key}=… in $EPISODIC_OUTPUTS)${hint}; it renders empty unless its agent publishes it`;
          out.warnings.push({ path, message });
        }
      }
    }
  }
  return out;
}

/** Each distinct reference in `text`: the whole placeholder, the step and the key. */
function refsIn(text: string | undefined): Array<[string, string, string]> {
  if (!text) return [];
  const seen = new Map<string, [string, string, string]>();
  for (const m of text.matchAll(STEP_REF)) {
    const id = `${m[1]}.${m[2]}`;
    if (!seen.has(id)) seen.set(id, [`{{steps.${m[1]}.outputs.${m[2]}}}`, m[1] as string, m[2] as string]);
  }
  return [...seen.values()];
}

/** The keys a prompt asks its agent to publish; its own placeholders do not count. */
export function askedKeys(prompt: string): string[] {
  const text = prompt.replace(ANY_PLACEHOLDER, ' ');
  return [...new Set(Array.from(text.matchAll(ASKED), (m) => (m[1] ?? m[2]) as string))];
}
