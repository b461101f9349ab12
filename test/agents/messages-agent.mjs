#!/usr/bin/env node
// A stand-in agent that speaks the real Anthropic Messages API: one request to $ANTHROPIC_BASE_URL with
// $ANTHROPIC_API_KEY (behind the gateway: its token), as Claude Code would. A 200 ends the task
// (<promise>COMPLETE</promise>); an error answer is printed as Claude Code prints it (a usage limit with its
// reset) and the agent exits 1. With $MESSAGES_AGENT_ENV_FILE it first writes its environment there (JSON).
import { writeFileSync } from 'node:fs';

// What the agent was given (the tests look for the real key in it): its environment, in its working directory.
if (process.env.MESSAGES_AGENT_ENV_FILE)
  writeFileSync(process.env.MESSAGES_AGENT_ENV_FILE, JSON.stringify(process.env));
const base = process.env.ANTHROPIC_BASE_URL;
const key = process.env.ANTHROPIC_API_KEY;
if (!base || !key) {
  process.stdout.write('messages-agent: ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY must be set\n');
  process.exit(2);
}
const res = await fetch(`${base}/v1/messages`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
  body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'go' }] }),
});
const text = await res.text();
if (res.ok) {
  process.stdout.write('All steps are finished. <promise>COMPLETE</promise>\n');
  process.exit(0);
}
const reset = Number(res.headers.get('anthropic-ratelimit-unified-reset'));
if (res.headers.get('anthropic-ratelimit-unified-status') === 'rejected' && reset > 0) {
  const at = new Date(reset * 1000);
  const clock = `${at.getUTCHours()}:${String(at.getUTCMinutes()).padStart(2, '0')}`;
  process.stdout.write(`You've hit your 5-hour limit · resets ${clock} (UTC)\n`);
} else process.stdout.write(`API Error: ${res.status} ${text.slice(0, 300)}\n`);
process.exit(1);
