#!/usr/bin/env node
// handoff: the client task writes a client for the URL and routes its prompt names (the api task's outputs).
import { writeFileSync } from 'node:fs';
import { answer, field, readPrompt } from './stream.mjs';

const prompt = readPrompt();
const url = field(prompt, 'URL');
const routes = field(prompt, 'Routes').split(/\s+/).filter(Boolean);
if (!/^https?:\/\/\S+$/.test(url)) {
  answer(`No URL in the prompt (got "${url}").`);
  process.exit(1);
}
const calls = routes.map((r) => `await fetch(${JSON.stringify(url + r)});`).join('\n');
writeFileSync('client.mjs', `${calls}\n`);
answer(`client.mjs calls ${routes.length} route(s) of ${url}. <promise>COMPLETE</promise>`);
