#!/usr/bin/env node
// A stand-in agent that speaks the op channel: it reads its prompt (stdin, $EPISODIC_PROMPT_FILE or the last
// argument), and for every line of the prompt's task part (after the last "## Task" line, or the whole prompt
// without one) that starts with "@op " appends the rest of the line to $EPISODIC_OPS. "@exit N" exits with N;
// "@raw TEXT" appends TEXT to $EPISODIC_OPS as it is (hostile input); "@touch FILE" creates FILE; "@wait FILE"
// waits until FILE exists; "@flood N" appends N KiB of hostile lines; "@cost USD" is the run's reported cost
// (default 0.01). In @op and @raw lines ${NAME} becomes the value of env NAME (how an agent copies a secret it
// was given into an op). OPS_AGENT_RECORD=file gets one JSON line per run: {episode, prompt}. Prints one
// line of text (OPS_AGENT_CLAUDE=1: a Claude stream-json result line) and exits 0 otherwise.
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

function readPrompt() {
  if (process.env.EPISODIC_PROMPT_FILE) return readFileSync(process.env.EPISODIC_PROMPT_FILE, 'utf8');
  try {
    const stdin = readFileSync(0, 'utf8');
    if (stdin) return stdin;
  } catch {}
  return process.argv.at(-1) ?? '';
}

const prompt = readPrompt();
if (process.env.OPS_AGENT_RECORD) {
  const line = JSON.stringify({ episode: Number(process.env.EPISODIC_EPISODE), prompt });
  appendFileSync(process.env.OPS_AGENT_RECORD, `${line}\n`);
}
const lines = prompt.split('\n');
const taskAt = lines.findLastIndex((l) => l.trim() === '## Task');
let exitCode = 0;
let costUSD = 0.01;
for (const line of lines.slice(taskAt + 1)) {
  const text = line.trim();
  const fromEnv = (s) => s.replace(/\$\{([A-Z_][A-Z0-9_]*)\}/g, (_, name) => process.env[name] ?? '');
  if (text.startsWith('@op ')) appendFileSync(process.env.EPISODIC_OPS, `${fromEnv(text.slice(4))}\n`);
  else if (text.startsWith('@raw ')) appendFileSync(process.env.EPISODIC_OPS, `${fromEnv(text.slice(5))}\n`);
  else if (text.startsWith('@exit ')) exitCode = Number(text.slice(6));
  else if (text.startsWith('@cost ')) costUSD = Number(text.slice(6));
  else if (text.startsWith('@touch ')) writeFileSync(text.slice(7), '');
  else if (text.startsWith('@flood ')) {
    // N KiB of hostile lines: a huge line, bad JSON, unknown ops, path names, valid ops past the cap.
    const junk = [`{"op":"set","key":"k","value":"${'x'.repeat(20000)}"}`, '{"op":', '{"op":"exec","cmd":"rm -rf /"}'];
    junk.push('{"op":"spawn","name":"../../etc","prompt":"p"}', '{"op":"del","key":"flood"}');
    let written = 0;
    for (let i = 0; written < Number(text.slice(7)) * 1024; i++) {
      const line = `${junk[i % junk.length]}\n`;
      appendFileSync(process.env.EPISODIC_OPS, line);
      written += line.length;
    }
  } else if (text.startsWith('@wait ')) while (!existsSync(text.slice(6))) await sleep(50);
}
const said = `ops-agent: episode ${process.env.EPISODIC_EPISODE} done`;
const claude = { type: 'result', subtype: 'success', is_error: false, result: said, total_cost_usd: costUSD };
process.stdout.write(`${process.env.OPS_AGENT_CLAUDE ? JSON.stringify(claude) : said}\n`);
process.exit(exitCode);
