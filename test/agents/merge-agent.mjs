#!/usr/bin/env node
// A stand-in agent for merge-queue tests. As a task's agent: replaces line MERGE_AGENT_LINE of
// MERGE_AGENT_FILE with MERGE_AGENT_TEXT, or creates MERGE_AGENT_NEW_FILE, and exits 0.
// As a resolution episode (EPISODIC_MERGE_QUEUE=1, the prompt on stdin): drops the conflict markers of every
// file of the directory, keeping both sides, and creates MERGE_AGENT_ON_GATE when the prompt names a gate.
// It prints its prompt, so the episode's log shows what it was told.
// MERGE_AGENT_DELAY_MS: a task's agent works this long before it edits (an episode that overlaps others).
// MERGE_AGENT_BLOCK (a file): a resolution episode that finds it writes its pid there and waits to be killed.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const env = process.env;
if (env.EPISODIC_MERGE_QUEUE !== '1') {
  if (env.MERGE_AGENT_DELAY_MS) await new Promise((r) => setTimeout(r, Number(env.MERGE_AGENT_DELAY_MS)));
  if (env.MERGE_AGENT_NEW_FILE) writeFileSync(env.MERGE_AGENT_NEW_FILE, `${env.MERGE_AGENT_TEXT ?? 'new'}\n`);
  if (env.MERGE_AGENT_FILE) {
    const lines = readFileSync(env.MERGE_AGENT_FILE, 'utf8').split('\n');
    lines[Number(env.MERGE_AGENT_LINE) - 1] = env.MERGE_AGENT_TEXT;
    writeFileSync(env.MERGE_AGENT_FILE, lines.join('\n'));
  }
  console.log('edited');
  process.exit(0);
}
const prompt = readFileSync(0, 'utf8');
if (env.MERGE_AGENT_BLOCK && existsSync(env.MERGE_AGENT_BLOCK) && readFileSync(env.MERGE_AGENT_BLOCK, 'utf8') === '') {
  writeFileSync(env.MERGE_AGENT_BLOCK, String(process.pid));
  setInterval(() => undefined, 1000); // until killed
} else {
  for (const name of readdirSync('.')) {
    if (name.startsWith('.') || !statSync(name).isFile()) continue;
    const text = readFileSync(name, 'utf8');
    if (!text.includes('<<<<<<<')) continue;
    const kept = text.split('\n').filter((l) => !/^(<{7}|={7}|>{7}|\|{7})( |$)/.test(l));
    writeFileSync(name, kept.join('\n'));
  }
  if (env.MERGE_AGENT_ON_GATE && /queue gate/.test(prompt))
    writeFileSync(join('.', env.MERGE_AGENT_ON_GATE), 'fixed\n');
  console.log(`resolved; the prompt was:\n${prompt}`);
}
