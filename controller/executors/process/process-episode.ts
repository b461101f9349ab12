// One episode as local processes: a fresh agent in the workspace, then (if it claims to be done) the verify
// command; the local controller and the runner in an episode pod both start every process here. Each one
// gets its argv without a shell, leads its own process group, carries the episode's marker in its
// environment, and writes its output into spool files that the log and the analyzer follow; on timeout,
// cancel or exit its whole tree is killed. Produces the EpisodeResult facts; the reconciler decides what they mean.
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, parse, resolve } from 'node:path';
import type { EpisodeResult } from '../../api/episode-result.ts';
import { rewriteInPlace } from '../../util/fs.ts';
import { EpisodeLog, exitNote, spoolFiles } from './episode-log.ts';
import type { OutputListener } from './episode-log.ts';
import { completionClaim } from '../../reconciler/outcome.ts';
import { createOutputAnalyzer } from '../output/index.ts';
import { createByteTail } from '../output/byte-tail.ts';
import type { OutputAnalyzer } from '../output/types.ts';
import { TREE_MARKER_ENV } from './process-tree.ts';
import type { GateRun } from '../../api/gates.ts';
import { runGates } from './gates.ts';
import { OUTPUTS_ENV } from '../../api/outputs.ts';
import { clearOutputsFile, episodeOutputs, outputsFileFor } from './outputs-file.ts';
import { noRoomOn, startProcess } from './agent-process.ts';
import { OPS_ENV, opsFilePath, prepareOpsFile, withOpsFrom } from './ops-file.ts';
import { limitMessage, watchLimits } from '../sandbox/episode-sandbox.ts';
import type { ProcessEpisodeRequest, RunningEpisode } from './episode-request.ts';
import {
  buildResult,
  checklistMet,
  claimFacts,
  claimRules,
  describeVerify,
  internalError,
  notStarted,
  seconds,
} from './episode-end.ts';
import type { VerifyOutcome } from './episode-end.ts';

const DEFAULT_KILL_GRACE_MS = 5000;
// Verify gets the rest of the episode's time, but never less than this: a slow test suite after a long
// episode should not fail just because the agent used most of its budget.
const MIN_VERIFY_TIMEOUT_MS = 60_000;

/** Where each process's argv comes from in the spec, for "cannot start" messages. */
const COMMAND_FIELDS = {
  agent: 'spec.agent.command',
  verify: 'spec.completion.verify',
  gate: "the gate's check or fix (spec.steps[].gates[])",
} as const;

/** Resolves once the agent runs (or could not be started: then `result` says why). */
export async function startProcessEpisode(req: ProcessEpisodeRequest): Promise<RunningEpisode> {
  const startedAt = Date.now();
  const killGraceMs = req.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  const marker = req.marker ?? randomUUID();
  let env: Record<string, string>;
  let stdinFile: string | undefined;
  let analyzer: OutputAnalyzer;
  const opsFile = opsFilePath(req.logFile);
  const outputsFile = outputsFileFor(resolve(req.logFile));
  try {
    analyzer = createOutputAnalyzer({ ...req.analyzer, prompt: req.prompt, command: req.argv });
    mkdirSync(dirname(req.logFile), { recursive: true });
    await prepareOpsFile(opsFile);
    const promptFile = req.promptVia === 'argument' ? undefined : writePromptFile(req);
    // After spec.agent.env: where ops and outputs go is ours to say, not the spec's.
    env = {
      // A sandboxed episode inherits nothing of the controller's environment (README "Sandbox").
      ...(req.sandbox ? {} : (req.baseEnv ?? inheritedEnv())),
      ...episodeEnv(req, promptFile),
      [TREE_MARKER_ENV]: marker,
      [OPS_ENV]: opsFile,
      [OUTPUTS_ENV]: outputsFile,
    };
    stdinFile = req.promptVia === 'stdin' ? promptFile : undefined;
  } catch (err) {
    return notStarted(req, startedAt, err);
  }
  await clearOutputsFile(outputsFile).catch(() => undefined);
  // Loaded on first use: the CLI's other commands never start a process.
  const { execa } = await import('execa');
  const log = new EpisodeLog(req.logFile);
  const start = (
    role: 'agent' | 'verify' | 'gate',
    argv: string[],
    stdin: string | undefined,
    timeoutMs: number,
    onOutput: OutputListener,
  ) => {
    const wrapped = req.sandbox?.wrap(argv, env);
    return startProcess(execa, wrapped?.argv ?? argv, {
      cwd: req.cwd,
      env: wrapped?.env ?? env,
      stdinFile: stdin,
      timeoutMs,
      killGraceMs,
      marker,
      log,
      spool: spoolFiles(req.logFile, role),
      onOutput,
      field: COMMAND_FIELDS[role],
    });
  };

  const argv = req.promptVia === 'argument' ? [...req.argv, req.prompt] : req.argv;
  let current = start('agent', argv, stdinFile, req.timeoutMs, (chunk, stream) => analyzer.write(chunk, stream));
  let cancelled = false;
  let cancelWhy: string | undefined;
  let finished = false;
  const unwatch = req.sandbox ? watchLimits(req.sandbox, () => current.stop()) : () => undefined;

  const run = async (): Promise<EpisodeResult> => {
    const exit = await current.exit;
    if (exit.spawnErrorMessage) log.note(`\n--- episodic: ${exit.spawnErrorMessage} ---\n`);
    // How the agent ended, for a controller restarted before this one records it (see episode-log-recovery.ts).
    else if (req.exitNote !== false) log.note(`\n${exitNote(exit)}\n`);
    if (exit.timedOut) log.note(`\n--- episodic: timed out after ${seconds(req.timeoutMs)}; process tree killed ---\n`);
    if (exit.cancelled)
      log.note(`\n--- episodic: cancelled${cancelWhy ? ` (${cancelWhy})` : ''}; process tree killed ---\n`);
    await current.release(); // the agent's output and how it ended are in the log now
    const analysis = analyzer.finish(exit);

    let verify: VerifyOutcome | undefined;
    const claimsDone = completionClaim(claimFacts(exit, analysis), claimRules(req)) !== undefined;
    if (claimsDone && req.verify && req.verify.length > 0 && !cancelled && !exit.timedOut) {
      const verifyTimeoutMs = Math.max(req.timeoutMs - (Date.now() - startedAt), MIN_VERIFY_TIMEOUT_MS);
      // One tail per stream, for the last line in the message: the pipes' chunks arrive in no fixed order.
      const tails = { stdout: createByteTail(4096), stderr: createByteTail(4096) };
      log.note(`\n--- episodic: verify ${JSON.stringify(req.verify)} ---\n`);
      current = start('verify', req.verify, undefined, verifyTimeoutMs, (chunk, stream) => tails[stream].push(chunk));
      verify = describeVerify(await current.exit, tails.stderr.text(), tails.stdout.text(), verifyTimeoutMs);
      log.note(`\n--- episodic: ${verify.note ?? 'verify passed'} ---\n`); // on a line of its own, whatever verify printed last
      await current.release();
    }
    let gates: GateRun[] | undefined;
    const cleanExit = exit.exitCode === 0 && !analysis.agentError && !cancelled && !exit.timedOut;
    const claimed = claimsDone && (!verify || verify.exitCode === 0);
    const confirmed = cleanExit && (req.fixEpisode || claimed || (!claimsDone && checklistMet(req)));
    if (confirmed && req.gates && req.gates.length > 0) {
      gates = await runGates(req.gates, {
        run: async (gateArgv, timeoutMs, onOutput) => {
          current = start('gate', gateArgv, undefined, timeoutMs, onOutput);
          const end = await current.exit;
          await current.release();
          return end;
        },
        note: (text) => log.note(`\n--- episodic: ${text} ---\n`),
        cancelled: () => cancelled,
      });
    }
    const noRoom = exit.exitCode === 0 ? undefined : (log.noRoom ?? noRoomOn(dirname(req.logFile)));
    const durationMs = Date.now() - startedAt;
    const built = buildResult({ req, exit, analysis, verify, cancelled, cancelWhy, noRoom, durationMs });
    const published = await episodeOutputs(analysis.outputs, outputsFile);
    return withSandbox({ ...(gates ? { ...built, gates } : built), ...published }, req, log, unwatch);
  };

  const result = run()
    .catch(async (err: unknown) => {
      unwatch();
      await req.sandbox?.close().catch(() => []); // its sockets and group, after a bug of ours too
      return internalError(err, startedAt);
    })
    .then(async (r) => {
      await current.release(); // after an internal error too
      await log.close();
      return withOpsFrom(r, opsFile); // whatever the outcome: the agent asked for them
    })
    .finally(() => {
      finished = true;
    });
  return {
    pid: current.pid,
    pidStartTime: current.pidStartTime,
    result,
    cancel(why) {
      // Nothing to cancel once finished, or when the agent never started (the result already says why).
      if (finished || cancelled || current.pid === undefined) return;
      cancelled = true;
      cancelWhy = why;
      current.cancel();
    },
  };
}

/** The sandbox's part of the result: how it confined the episode, a bound it hit, what its proxy refused. */
async function withSandbox(
  r: EpisodeResult,
  req: ProcessEpisodeRequest,
  log: EpisodeLog,
  unwatch: () => void,
): Promise<EpisodeResult> {
  unwatch();
  if (!req.sandbox) return r;
  const refused = await req.sandbox.close();
  for (const why of refused.slice(0, 20)) log.note(`\n--- episodic: sandbox proxy refused: ${why} ---\n`);
  const run = req.sandbox.run();
  if (!run.limitHit) return { ...r, sandbox: run };
  const message = limitMessage(run.limitHit, req.sandboxResources ?? {});
  log.note(`\n--- episodic: ${message} ---\n`);
  return { ...r, sandbox: run, message };
}

/** Next to the log, not in the workspace: the agent must not commit it or mistake it for project files. */
function writePromptFile(req: ProcessEpisodeRequest): string {
  const { dir, name } = parse(resolve(req.logFile));
  if (req.promptFile) {
    rewriteInPlace(req.promptFile, req.prompt); // the task's scratch file: one episode (and reader) at a time
    return req.promptFile;
  }
  const promptFile = join(dir, `${name}.prompt.md`);
  writeFileSync(promptFile, req.prompt, { mode: 0o600 });
  return promptFile;
}

function inheritedEnv(): Record<string, string> {
  return Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
}

function episodeEnv(req: ProcessEpisodeRequest, promptFile: string | undefined): Record<string, string> {
  const env: Record<string, string> = {
    EPISODIC_TASK: req.name,
    EPISODIC_NAMESPACE: req.namespace,
    EPISODIC_EPISODE: String(req.episode),
    EPISODIC_MAX_EPISODES: String(req.maxEpisodes),
  };
  if (req.promptVia === 'file' && promptFile) env.EPISODIC_PROMPT_FILE = promptFile;
  return { ...env, ...req.env };
}
