#!/usr/bin/env node
// The sleeper example's agent: a task that says "it boils in N seconds" notes the time and hands the
// controller a sleep op (the task waits, Sleeping, then goes on with its next frame); any other task notes
// the time it ran. KETTLE.log shows both times.
import { appendFileSync } from 'node:fs';
import { answer, op, readPrompt, taskPart } from './lib.mjs';

const task = taskPart(readPrompt());
const seconds = Number(/boils in (\d+) seconds/.exec(task)?.[1] ?? 0);
const line = task.split('\n')[0];
appendFileSync('KETTLE.log', `${new Date().toISOString()} ${line}\n`);
if (seconds > 0) op({ op: 'sleep', seconds });
answer(seconds > 0 ? `Sleeping ${seconds} seconds.` : `Done: ${line}`);
