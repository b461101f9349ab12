#!/usr/bin/env node
// A stand-in for `claude -p --output-format stream-json --verbose` that needs no network: each episode it
// reads the prompt on stdin, ticks one unchecked item of PLAN.md in its workspace, and prints Claude Code's
// real stream-json events. When nothing is left it says <promise>COMPLETE</promise>. Memory lives only in
// the files, like a real Ralph loop.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const prompt = readFileSync(0, 'utf8');
const session = `demo-${process.env.EPISODIC_TASK}-${process.env.EPISODIC_EPISODE}`;
const emit = (event) => process.stdout.write(`${JSON.stringify({ ...event, session_id: session })}\n`);

if (!existsSync('PLAN.md')) {
  writeFileSync('PLAN.md', ['- [ ] write the parser', '- [ ] add tests', '- [ ] document the CLI', ''].join('\n'));
}
const lines = readFileSync('PLAN.md', 'utf8').split('\n');
const next = lines.findIndex((l) => l.startsWith('- [ ]'));
emit({ type: 'system', subtype: 'init', model: 'demo-model', cwd: process.cwd(), tools: ['Read', 'Edit'] });
let text;
if (next >= 0) {
  lines[next] = lines[next].replace('- [ ]', '- [x]');
  writeFileSync('PLAN.md', lines.join('\n'));
  writeFileSync('progress.txt', `episode ${process.env.EPISODIC_EPISODE}: ${lines[next].slice(6)}\n`, { flag: 'a' });
  const left = lines.filter((l) => l.startsWith('- [ ]')).length;
  text =
    left === 0
      ? 'Every item is done. <promise>COMPLETE</promise>'
      : `Did "${lines[next].slice(6)}"; ${left} item(s) left.`;
} else {
  text = 'Nothing left to do. <promise>COMPLETE</promise>';
}
const usage = {
  input_tokens: 1200 + prompt.length,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 3000,
  output_tokens: 80,
};
emit({
  type: 'assistant',
  message: {
    id: 'msg_demo',
    type: 'message',
    role: 'assistant',
    model: 'demo-model',
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    usage,
  },
});
emit({
  type: 'result',
  subtype: 'success',
  is_error: false,
  duration_ms: 40,
  num_turns: 1,
  result: text,
  total_cost_usd: 0.0123,
  usage,
});
