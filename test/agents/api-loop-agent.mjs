#!/usr/bin/env node
// A stand-in agent that speaks the Anthropic Messages API through whatever ANTHROPIC_BASE_URL names, with
// ANTHROPIC_API_KEY, one request after another until an answer is not 200 (the gateway's budget refusal);
// then it prints that answer's message and exits 1. Against the model server's toolloop it never ends by itself.
const base = process.env.ANTHROPIC_BASE_URL;
const body = JSON.stringify({
  model: 'claude-sonnet-4-5',
  max_tokens: 10,
  messages: [{ role: 'user', content: 'go' }],
});
for (let i = 0; i < 1000; i++) {
  const res = await fetch(`${base}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': process.env.ANTHROPIC_API_KEY ?? '' },
    body,
  });
  const text = await res.text();
  if (res.status !== 200) {
    console.log(`stopped after ${i} requests: ${res.status} ${text.slice(0, 300)}`);
    process.exit(1);
  }
}
console.log('never refused');
