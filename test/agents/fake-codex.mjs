#!/usr/bin/env node
// A stand-in for `codex exec --json`: prints OpenAI Codex JSONL events (thread.started, turn.started,
// item.completed, turn.completed with usage and no cost, or error chatter + turn.failed) without any API.
//
// The step (what to do this run) is chosen exactly as in fake-claude.mjs: --fake-mode=MODE flag, FAKE_AGENT_*
// environment, or a JSON script (`.fake-agent.json` / FAKE_AGENT_SCRIPT) with episodes / steps /
// succeedAfter / default; FAKE_AGENT_RECORD records what each run was given. See fake-claude.mjs.
//
// MODES (exit code 0 unless noted):
//   success      agent_message ending in <promise>PROMISE</promise>, then turn.completed with usage
//   continue     same without the promise
//   fail         429 retry `error` events, then a decisive turn.failed, exit 1
//   usage-limit  error + turn.failed saying the usage limit was hit ("try again in 2 hours"), exit 1
//   sleep        start hard-to-kill descendants, write their pids to pidFile, sleep sleepSeconds, then `then`
//   chatty       chattyMB megabytes of reasoning items, then `then` (default continue)
//   malformed    truncated JSON and prose, no turn.completed
// Step fields: text, promise, usage {input, output, cacheRead}, exitCode, stderr, writeFiles, delayMs.
import { randomUUID } from 'node:crypto';
import {
  chooseStep,
  filler,
  MALFORMED_LINES,
  out,
  readStdin,
  publishOutputs,
  recordRun,
  sleepFor,
  spawnSleepers,
  writeFiles,
} from './fake-agent-lib.mjs';

const argv = process.argv.slice(2);
const { step, run } = chooseStep(argv);
const stdin = await readStdin();
recordRun('codex', step, run, stdin);
publishOutputs(step);
if (step.delayMs) await sleepFor(step.delayMs / 1000);
writeFiles(step);
if (step.stderr) process.stderr.write(`${step.stderr}\n`);

const promise = step.promise ?? 'COMPLETE';
let item = 0;
const event = (obj) => out(`${JSON.stringify(obj)}\n`);
const itemDone = (fields) => event({ type: 'item.completed', item: { id: `item_${item++}`, ...fields } });

async function finish(mode) {
  switch (mode) {
    case 'success':
    case 'continue': {
      const base = step.text ?? (mode === 'success' ? 'Implemented and tested.' : 'Implemented one item; more remain.');
      await itemDone({ type: 'reasoning', text: '**Checking the plan**' });
      await itemDone({
        type: 'command_execution',
        command: "bash -lc 'npm test'",
        aggregated_output: '12 passing\n',
        exit_code: 0,
        status: 'completed',
      });
      await itemDone({
        type: 'agent_message',
        text: mode === 'success' ? `${base} <promise>${promise}</promise>` : base,
      });
      const u = step.usage ?? {};
      await event({
        type: 'turn.completed',
        usage: {
          input_tokens: u.input ?? 24763,
          cached_input_tokens: u.cacheRead ?? 24448,
          output_tokens: u.output ?? 122,
        },
      });
      return 0;
    }
    case 'fail':
      for (const n of [1, 2]) {
        await event({
          type: 'error',
          message: `stream error: exceeded retry limit, last status: 429 Too Many Requests; retrying ${n}/5 in ${2 * n}.1s…`,
        });
      }
      await event({
        type: 'turn.failed',
        error: { message: step.text ?? 'exceeded retry limit, last status: 429 Too Many Requests' },
      });
      return 1;
    case 'usage-limit': {
      const text =
        step.text ??
        "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 2 hours 5 minutes.";
      await event({ type: 'error', message: text });
      await event({ type: 'turn.failed', error: { message: text } });
      return 1;
    }
    case 'malformed':
      for (const line of MALFORMED_LINES) await out(`${line}\n`);
      return 0;
    default:
      process.stderr.write(`fake-codex: unknown mode ${JSON.stringify(mode)}\n`);
      return 2;
  }
}

await event({ type: 'thread.started', thread_id: randomUUID() });
await event({ type: 'turn.started' });
let code;
if (step.mode === 'sleep') {
  if (step.children !== false) await spawnSleepers(step.pidFile);
  await sleepFor(step.sleepSeconds ?? 3600, step.ignoreSigterm);
  code = await finish(step.then ?? 'continue');
} else if (step.mode === 'chatty') {
  const line = `${JSON.stringify({ type: 'item.completed', item: { id: 'item_chatty', type: 'reasoning', text: filler(step.chattyLineKB ?? 4) } })}\n`;
  const block = line.repeat(Math.max(1, Math.floor((256 * 1024) / line.length)));
  const total = (step.chattyMB ?? 10) * 1024 * 1024;
  for (let written = 0; written < total; written += block.length) await out(block);
  code = await finish(step.then ?? 'continue');
} else {
  code = await finish(step.mode);
}
process.exitCode = step.exitCode ?? code;
