#!/usr/bin/env node
// The planner example's agent (and its workers'): what it does follows from the task its prompt gives.
//   "Plan: …" + a list of texts  → push two frames: "Spawn: …" (next) and "Report: … {{children}}"
//   "Spawn: …" + a list of texts → spawn one worker per text (a one-frame stack: "Count: …")
//   "Count: …" (a worker)        → count the words, publish WORDS
//   "Report: …" + {{children}}   → read each child's WORDS from the prompt, write REPORT.md, publish TOTAL
import { writeFileSync } from 'node:fs';
import { answer, items, op, publish, readPrompt, taskPart } from './lib.mjs';

const task = taskPart(readPrompt());
const verb = /^(\w+):/.exec(task)?.[1];
const texts = items(task);

if (verb === 'Plan') {
  const list = texts.map((t) => `- ${t.name}: ${t.text}`).join('\n');
  op({
    op: 'push',
    frames: [`Spawn: one worker per text.\n${list}`, "Report: sum the workers' counts.\n{{children}}"],
  });
  answer(`Planned: spawn ${texts.length} workers, then report.`);
} else if (verb === 'Spawn') {
  for (const t of texts)
    op({ op: 'spawn', name: t.name, stack: [`Count: the words of this text.\n- text: ${t.text}`] });
  answer(`Spawned ${texts.map((t) => t.name).join(', ')}.`);
} else if (verb === 'Count') {
  const words = texts[0]?.text.split(/\s+/).filter(Boolean).length ?? 0;
  publish({ WORDS: String(words) });
  answer(`${words} words.`);
} else if (verb === 'Report') {
  // {{children}}: "- NAME: PHASE" then "  output WORDS: N" per child.
  const counts = [...task.matchAll(/^- ([a-z0-9-]+): Succeeded\n(?: {2}.*\n)*? {2}output WORDS: (\d+)$/gm)];
  const total = counts.reduce((sum, m) => sum + Number(m[2]), 0);
  const lines = counts.map((m) => `${m[1]}: ${m[2]} words`);
  writeFileSync('REPORT.md', `${[...lines, `total: ${total} words`].join('\n')}\n`);
  publish({ TOTAL: String(total), WORKERS: String(counts.length) });
  answer(`Reported ${total} words from ${counts.length} workers.`);
} else {
  answer(`I do not know how to do this task: ${JSON.stringify(task.slice(0, 80))}`);
  process.exit(1);
}
