#!/usr/bin/env node
// A stand-in agent for the schedule example: writes the prompt into NOTES.md and prints Claude Code's
// stream-json events, offline. Its prompt says which tick it runs for.
import { appendFileSync, readFileSync } from 'node:fs';

const prompt = readFileSync(0, 'utf8');
const session = `notes-${process.env.EPISODIC_TASK}-${process.env.EPISODIC_EPISODE}`;
const emit = (event) => process.stdout.write(`${JSON.stringify({ ...event, session_id: session })}\n`);
appendFileSync('NOTES.md', `${prompt.trim()}\n`);
emit({ type: 'system', subtype: 'init', model: 'notes-model', cwd: process.cwd(), tools: ['Edit'] });
const text = 'Notes written. <promise>DONE</promise>';
emit({ type: 'assistant', message: { role: 'assistant', content: [{ type: 'text', text }] } });
emit({ type: 'result', subtype: 'success', is_error: false, result: text, total_cost_usd: 0 });
