// Shared machinery of the stand-in agents (fake-claude.mjs, fake-codex.mjs): choosing what to do this run,
// recording what the agent was given, spawning hard-to-kill children, sleeping, printing lots of output.
// Plain JavaScript so the scripts run anywhere with a bare `node`. See fake-claude.mjs for the documentation.
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export const DEFAULT_SCRIPT_FILE = '.fake-agent.json';
export const DEFAULT_COUNTER_FILE = '.fake-agent-runs';

/** `--fake-mode=X` / `--fake-script=PATH` style flags; everything else is left for the agent's own parsing. */
function flag(argv, name) {
  const prefix = `--${name}=`;
  const hit = argv.find((a) => a.startsWith(prefix));
  return hit === undefined ? undefined : hit.slice(prefix.length);
}

function numberEnv(name) {
  const v = process.env[name];
  return v === undefined || v === '' ? undefined : Number(v);
}

/** Step options given through FAKE_AGENT_* environment variables. */
function stepFromEnv() {
  const step = {};
  const set = (key, value) => value !== undefined && (step[key] = value);
  set('mode', process.env.FAKE_AGENT_MODE || undefined);
  set('text', process.env.FAKE_AGENT_TEXT);
  set('promise', process.env.FAKE_AGENT_PROMISE);
  set('exitCode', numberEnv('FAKE_AGENT_EXIT_CODE'));
  set('costUSD', numberEnv('FAKE_AGENT_COST_USD'));
  set('sleepSeconds', numberEnv('FAKE_AGENT_SLEEP_SECONDS'));
  set('chattyMB', numberEnv('FAKE_AGENT_CHATTY_MB'));
  set('pidFile', process.env.FAKE_AGENT_PID_FILE);
  set('outputs', process.env.FAKE_AGENT_OUTPUTS);
  if (process.env.FAKE_AGENT_IGNORE_SIGTERM === '1') step.ignoreSigterm = true;
  return step;
}

/**
 * Decide this run's step. Precedence: --fake-mode flag > FAKE_AGENT_* env > script file. In the script,
 * `episodes[EPISODIC_EPISODE]` beats `steps[run - 1]` (last entry repeats) beats `succeedAfter` beats `default`.
 */
export function chooseStep(argv) {
  const cwd = process.cwd();
  const scriptPath = flag(argv, 'fake-script') ?? process.env.FAKE_AGENT_SCRIPT ?? DEFAULT_SCRIPT_FILE;
  const script = existsSync(resolve(cwd, scriptPath)) ? JSON.parse(readFileSync(resolve(cwd, scriptPath), 'utf8')) : {};
  const countsRuns = Array.isArray(script.steps) || typeof script.succeedAfter === 'number';
  const run = countsRuns ? bumpCounter(resolve(cwd, script.counterFile ?? DEFAULT_COUNTER_FILE)) : undefined;

  let fromScript = script.default ?? {};
  if (typeof script.succeedAfter === 'number') {
    fromScript = run >= script.succeedAfter ? { mode: 'success' } : { mode: 'continue', ...script.default };
  }
  if (Array.isArray(script.steps) && script.steps.length > 0) {
    fromScript = script.steps[Math.min(run, script.steps.length) - 1];
  }
  const episode = process.env.EPISODIC_EPISODE;
  if (script.episodes && episode !== undefined && script.episodes[episode]) fromScript = script.episodes[episode];
  // One workspace shared by several tasks (a fan-out's children): a step per task, by $EPISODIC_TASK.
  const task = process.env.EPISODIC_TASK;
  if (script.tasks && task !== undefined && Object.hasOwn(script.tasks, task)) fromScript = script.tasks[task];

  const step = { mode: 'success', ...fromScript, ...stepFromEnv() };
  const flagMode = flag(argv, 'fake-mode');
  if (flagMode) step.mode = flagMode;
  if (script.record && !step.record) step.record = script.record;
  return { step, run };
}

function bumpCounter(file) {
  const previous = existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) || 0 : 0;
  writeFileSync(file, `${previous + 1}\n`);
  return previous + 1;
}

/** All of stdin, or '' when it is a terminal or /dev/null. */
export async function readStdin() {
  if (process.stdin.isTTY) return '';
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/** The prompt this run was given: stdin, else the prompt file, else the last argument that is not a flag. */
export function promptGiven(argv, stdin) {
  if (stdin !== '') return stdin;
  const file = process.env.EPISODIC_PROMPT_FILE;
  if (file && existsSync(file)) return readFileSync(file, 'utf8');
  const last = argv.at(-1);
  return last !== undefined && !last.startsWith('-') ? last : '';
}

/** The step's `outputs` (text, or an object written as JSON) into the file $EPISODIC_OUTPUTS names, as an agent would. */
export function publishOutputs(step) {
  const file = process.env.EPISODIC_OUTPUTS;
  if (!file || step.outputs === undefined) return;
  writeFileSync(file, typeof step.outputs === 'string' ? step.outputs : JSON.stringify(step.outputs));
}

/** Append one JSON line describing what this run was given (FAKE_AGENT_RECORD or the step's `record`). */
export function recordRun(agent, step, run, stdin) {
  const file = process.env.FAKE_AGENT_RECORD || step.record;
  if (!file) return;
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k.startsWith('EPISODIC_') || k.startsWith('FAKE_') || k === 'CUSTOM'),
  );
  const promptFile = process.env.EPISODIC_PROMPT_FILE;
  const entry = {
    agent,
    pid: process.pid,
    run,
    mode: step.mode,
    argv: process.argv.slice(2),
    cwd: process.cwd(),
    env,
    stdin,
    promptFileContent: promptFile && existsSync(promptFile) ? readFileSync(promptFile, 'utf8') : undefined,
  };
  mkdirSync(dirname(resolve(file)), { recursive: true });
  appendFileSync(resolve(file), `${JSON.stringify(entry)}\n`);
}

/** Simulate work: `writeFiles: {"relative/path": "content"}` in the workspace. */
export function writeFiles(step) {
  for (const [path, content] of Object.entries(step.writeFiles ?? {})) {
    mkdirSync(dirname(resolve(path)), { recursive: true });
    writeFileSync(resolve(path), content);
  }
}

/** Write to stdout respecting backpressure, so huge outputs do not pile up in this process either. */
export function out(text) {
  return new Promise((done) => {
    if (process.stdout.write(text)) done();
    else process.stdout.once('drain', done);
  });
}

/**
 * Start descendants that a naive kill would miss, write every pid (this process first) to pidFile, one per
 * line, and resolve once they are all running:
 *   - a plain `sleep` child holding our stdout/stderr (same process group: survives killing only the leader);
 *   - a setsid'd `sleep` (own session and group: survives a group kill);
 *   - a double-forked, setsid'd `sleep` whose parent exited (reparented to init: no ppid link back to us);
 *   - a child that ignores SIGTERM (needs the SIGKILL escalation).
 */
export async function spawnSleepers(pidFile) {
  const keep = (child) => {
    child.unref();
    return child.pid;
  };
  const pids = [process.pid];
  // Inherits stdout/stderr like a backgrounded `npm run dev &` would: it holds the agent's output pipes open.
  pids.push(keep(spawn('sleep', ['3600'], { stdio: ['ignore', 'inherit', 'inherit'] })));
  pids.push(keep(spawn('sleep', ['3600'], { stdio: 'ignore', detached: true })));
  pids.push(await doubleFork());
  pids.push(await sigtermIgnorer());
  if (pidFile) {
    mkdirSync(dirname(resolve(pidFile)), { recursive: true });
    writeFileSync(resolve(pidFile), `${pids.join('\n')}\n`);
  }
  return pids;
}

/** Resolves with the pid once the SIGTERM handler is installed (an earlier SIGTERM would still kill it). */
function sigtermIgnorer() {
  const code = "process.on('SIGTERM',()=>{});process.stdout.write('ready');setInterval(()=>{},1e6)";
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'ignore'] });
    child.on('error', fail);
    child.stdout.once('data', () => {
      child.stdout.destroy();
      child.unref();
      done(child.pid);
    });
  });
}

function doubleFork() {
  const code =
    "const c=require('child_process').spawn('sleep',['3600'],{stdio:'ignore',detached:true});" +
    'c.unref();process.stdout.write(String(c.pid));';
  return new Promise((done, fail) => {
    const middle = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
    let pid = '';
    middle.stdout.on('data', (d) => (pid += d));
    middle.on('error', fail);
    middle.on('exit', () => done(Number(pid)));
  });
}

/** Sleep, optionally shrugging off SIGTERM so only SIGKILL ends us. */
export function sleepFor(seconds, ignoreSigterm) {
  if (ignoreSigterm) process.on('SIGTERM', () => {});
  return new Promise((done) => setTimeout(done, seconds * 1000));
}

/** Resolves once `path` exists (relative to the working directory): a go signal a test gives. */
export async function waitForFile(path) {
  while (!existsSync(resolve(path))) await sleepFor(0.02);
}

/** A ~sizeKB filler string, built once. */
export function filler(sizeKB) {
  const word = 'lorem ipsum dolor sit amet ';
  return word.repeat(Math.max(1, Math.ceil((sizeKB * 1024) / word.length))).slice(0, sizeKB * 1024);
}

/** Malformed output: truncated JSON, prose, stray bytes, and JSON with wrong types. */
export const MALFORMED_LINES = [
  '{"type":"assistant","message":{"content":[{"type":"te',
  'this is not json at all',
  '\u0000\u0001\u00ff\ufffd garbage',
  '{"type":"result","is_error":"maybe","total_cost_usd":"lots","usage":"none"}',
  '[1,2,3]',
  '{',
];
