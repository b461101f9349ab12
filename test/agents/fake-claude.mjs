#!/usr/bin/env node
// A stand-in for `claude -p --output-format stream-json --verbose`: prints real Claude Code stream-json
// (system/init, assistant, result with total_cost_usd, usage, is_error, api_error_status) without calling
// any API. Used by tests across the project; run it as `node test/agents/fake-claude.mjs [claude flags]`.
//
// WHAT TO DO THIS RUN (a "step"), first match wins:
//   1. argv flag      --fake-mode=MODE   (also --fake-script=PATH to pick the script file)
//   2. environment    FAKE_AGENT_MODE=MODE, plus FAKE_AGENT_TEXT, FAKE_AGENT_PROMISE, FAKE_AGENT_EXIT_CODE,
//                     FAKE_AGENT_COST_USD, FAKE_AGENT_SLEEP_SECONDS, FAKE_AGENT_CHATTY_MB, FAKE_AGENT_PID_FILE,
//                     FAKE_AGENT_IGNORE_SIGTERM=1 (env values override the script's step fields)
//   3. a JSON script  FAKE_AGENT_SCRIPT=PATH, default `.fake-agent.json` in the working directory:
//        { "episodes": { "1": {"mode": "transient"}, "2": {"mode": "success"} },  // by $EPISODIC_EPISODE
//          "steps": [ {"mode": "continue"}, {"mode": "success"} ],  // by run count; the last one repeats
//          "succeedAfter": 3,         // continue on runs 1-2, success from run 3 on
//          "tasks": { "mig-each-3": {"mode": "fail"} },   // by $EPISODIC_TASK (over episodes)
//          "default": {"mode": "continue"},
//          "counterFile": ".fake-agent-runs",   // where runs are counted (only with steps/succeedAfter)
//          "record": "runs.jsonl" }             // like FAKE_AGENT_RECORD
//   4. otherwise mode "success".
//
// MODES (exit code 0 unless noted):
//   success      assistant + result text ending in <promise>PROMISE</promise> (PROMISE defaults to COMPLETE)
//   continue     same, but no promise: work remains
//   fail         a crash: a message on stderr, no result object, exit 1
//   max-turns    result subtype error_max_turns, is_error true, exit 1
//   transient    api_retry events, then is_error result with api_error_status 529 (overloaded), exit 1
//   auth         is_error result with api_error_status 401 while subtype says "success", exit 1
//   usage-limit  plain text "You've hit your limit · resets 3pm (Europe/Berlin)", exit 1
//                (text overrides the message; "asResult": true wraps it in an is_error result instead)
//   sleep        init, then start hard-to-kill descendants (see spawnSleepers in fake-agent-lib.mjs) and write
//                all their pids to pidFile, then sleep sleepSeconds (default 3600), then behave as `then`
//                ("continue" by default). ignoreSigterm: the agent itself ignores SIGTERM. children: false
//                skips the descendants.
//   chatty       chattyMB megabytes (default 10) of assistant events of chattyLineKB (default 4) each, then `then`
//   malformed    truncated JSON, prose and stray bytes, no result object
//   echo-prompt  echoes the prompt it was given, as the CLI would (stream-json: a `user` event; text: the
//                prompt's lines before the answer), then behaves as `then` ("continue" by default): a prompt
//                that names the sentinel must not complete the task
//   echo-prompt-prefixed  the answer starts with "Prompt was: " and the whole prompt, then the answer of
//                `then` ("continue" by default; its text "Working on it, not finished yet.")
//   echo-prompt-quoted    the same with the prompt quoted ("> " before each line)
//   echo-prompt-sentence  the same with only the prompt's sentences that name the sentinel, on one line
//
// STEP FIELDS (all optional): mode, text (final message), promise, costUSD (default 0.0123), usage
//   {input, output, cacheRead, cacheWrite}, exitCode (overrides the mode's), stderr (printed to stderr),
//   writeFiles {"path": "content"} (written in the working directory first, to simulate work), delayMs
//   (before any output), lingerSeconds (after the result, before exiting: a CLI that prints its result and
//   then tidies up), waitForFile (after the init event, wait until this path exists: a go signal from a
//   test), outputs (text, or an object written as JSON, into the file $EPISODIC_OUTPUTS names; env
//   FAKE_AGENT_OUTPUTS), plus the mode-specific ones above.
//
// RECORDING: with FAKE_AGENT_RECORD=PATH each run appends one JSON line {agent, pid, run, mode, argv, cwd,
//   env (EPISODIC_* and FAKE_*), stdin, promptFileContent} so tests can check what the agent was given.
//
// --output-format json prints only the final result object; --output-format text prints only its text.
import { randomUUID } from 'node:crypto';
import {
  chooseStep,
  filler,
  MALFORMED_LINES,
  out,
  promptGiven,
  readStdin,
  publishOutputs,
  recordRun,
  sleepFor,
  spawnSleepers,
  waitForFile,
  writeFiles,
} from './fake-agent-lib.mjs';

const argv = process.argv.slice(2);
const formatIndex = argv.indexOf('--output-format');
const outputFormat = formatIndex >= 0 ? argv[formatIndex + 1] : 'stream-json';
const sessionId = randomUUID();
const model = 'claude-sonnet-4-5';

const { step, run } = chooseStep(argv);
const stdin = await readStdin();
recordRun('claude', step, run, stdin);
publishOutputs(step);
if (step.delayMs) await sleepFor(step.delayMs / 1000);
writeFiles(step);
if (step.stderr) process.stderr.write(`${step.stderr}\n`);

const started = Date.now();
// The prompt repeated at the start of the answer, in the ways an agent may do it.
const ECHOES = {
  'echo-prompt-prefixed': (prompt) => `Prompt was: ${prompt}`,
  'echo-prompt-quoted': (prompt) => `You asked:\n${prompt.replace(/^/gm, '> ')}`,
  'echo-prompt-sentence': (prompt) =>
    `I will do as told: ${(prompt.match(/[^.!?\n]*<promise>[^\n]*/g) ?? []).join(' ').replace(/\s+/g, ' ')}`,
};
const promise = step.promise ?? 'COMPLETE';

function usage(u = {}) {
  return {
    input_tokens: u.input ?? 1200,
    cache_creation_input_tokens: u.cacheWrite ?? 0,
    cache_read_input_tokens: u.cacheRead ?? 3400,
    output_tokens: u.output ?? 56,
  };
}

async function event(obj) {
  if (outputFormat === 'stream-json') await out(`${JSON.stringify(obj)}\n`);
}

const init = () =>
  event({
    type: 'system',
    subtype: 'init',
    session_id: sessionId,
    model,
    cwd: process.cwd(),
    tools: ['Bash', 'Edit', 'Read', 'Write'],
    permissionMode: 'bypassPermissions',
  });

const assistant = (text) =>
  event({
    type: 'assistant',
    message: {
      id: `msg_${randomUUID().slice(0, 8)}`,
      type: 'message',
      role: 'assistant',
      model,
      content: [{ type: 'text', text }],
      stop_reason: 'end_turn',
      usage: usage(step.usage),
    },
    session_id: sessionId,
  });

async function result(fields) {
  const obj = {
    type: 'result',
    subtype: 'success',
    is_error: false,
    duration_ms: Date.now() - started,
    duration_api_ms: Math.max(0, Date.now() - started - 5),
    num_turns: 1,
    session_id: sessionId,
    total_cost_usd: step.costUSD ?? 0.0123,
    usage: usage(step.usage),
    permission_denials: [],
    ...fields,
  };
  if (outputFormat === 'json') await out(`${JSON.stringify(obj)}\n`);
  else if (outputFormat === 'text') await out(`${obj.result ?? ''}\n`);
  else await event(obj);
}

async function finish(mode) {
  switch (mode) {
    case 'success': {
      const text = `${step.text ?? 'All plan items are done and the tests pass.'} <promise>${promise}</promise>`;
      await assistant(text);
      await result({ result: text });
      return 0;
    }
    case 'continue': {
      const text = step.text ?? 'Implemented one more plan item; more remain.';
      await assistant(text);
      await result({ result: text });
      return 0;
    }
    case 'fail':
      process.stderr.write(`${step.text ?? 'Error: the agent crashed (fake failure)'}\n`);
      return 1;
    case 'max-turns':
      await result({
        subtype: 'error_max_turns',
        is_error: true,
        num_turns: 30,
        errors: ['Reached maximum number of turns (30)'],
      });
      return 1;
    case 'transient':
      for (const attempt of [1, 2]) {
        await event({
          type: 'system',
          subtype: 'api_retry',
          attempt,
          max_retries: 10,
          retry_delay_ms: 600 * attempt,
          error_status: 529,
          error: 'overloaded',
        });
      }
      await result({
        is_error: true,
        result: 'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        total_cost_usd: 0,
        usage: usage({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }),
        api_error_status: 529,
      });
      return 1;
    case 'auth':
      await result({
        is_error: true,
        result: 'Invalid API key · Please run /login',
        total_cost_usd: 0,
        usage: usage({ input: 0, output: 0, cacheRead: 0 }),
        api_error_status: 401,
      });
      return 1;
    case 'usage-limit': {
      const text = step.text ?? "You've hit your limit · resets 3pm (Europe/Berlin)";
      if (step.asResult) await result({ is_error: true, result: text, total_cost_usd: 0 });
      else await out(`${text}\n`);
      return 1;
    }
    case 'malformed':
      for (const line of MALFORMED_LINES) await out(`${line}\n`);
      return 0;
    default:
      process.stderr.write(`fake-claude: unknown mode ${JSON.stringify(mode)}\n`);
      return 2;
  }
}

let code;
if (step.mode === 'sleep') {
  await init();
  if (step.children !== false) await spawnSleepers(step.pidFile);
  await sleepFor(step.sleepSeconds ?? 3600, step.ignoreSigterm);
  code = await finish(step.then ?? 'continue');
} else if (step.mode === 'chatty') {
  await init();
  const line = `${JSON.stringify({ type: 'assistant', message: { id: 'msg_chatty', type: 'message', role: 'assistant', model, content: [{ type: 'text', text: filler(step.chattyLineKB ?? 4) }], stop_reason: null, usage: usage(step.usage) }, session_id: sessionId })}\n`;
  const block = line.repeat(Math.max(1, Math.floor((256 * 1024) / line.length)));
  const total = (step.chattyMB ?? 10) * 1024 * 1024;
  for (let written = 0; written < total; written += block.length) await out(block);
  code = await finish(step.then ?? 'continue');
} else if (step.mode === 'echo-prompt') {
  await init();
  const prompt = promptGiven(argv, stdin);
  if (outputFormat === 'text') await out(`${prompt}\n`);
  await event({
    type: 'user',
    message: { role: 'user', content: [{ type: 'text', text: prompt }] },
    session_id: sessionId,
  });
  code = await finish(step.then ?? 'continue');
} else if (ECHOES[step.mode]) {
  // The echo is the start of the answer itself: plain text, or the result and assistant text of json.
  await init();
  const echo = ECHOES[step.mode](promptGiven(argv, stdin).trim());
  const then = step.then ?? 'continue';
  const own = step.text ?? (then === 'success' ? 'All tests pass now.' : 'Working on it, not finished yet.');
  step.text = `${echo}\n${own}`;
  code = await finish(then);
} else {
  // The usage-limit sample is bare text: the CLI prints it instead of any JSON.
  if (step.mode !== 'usage-limit' || step.asResult) await init();
  if (step.waitForFile) await waitForFile(step.waitForFile);
  code = await finish(step.mode);
}
if (step.lingerSeconds) await sleepFor(step.lingerSeconds);
process.exitCode = step.exitCode ?? code;
