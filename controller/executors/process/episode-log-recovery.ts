// An episode's end read back from its log, for a controller restarted after a kill: the agent may have
// finished (printed its result, even exited) while no controller was alive to record it. The log holds the
// agent's output exactly as the analyzer saw it (stdout as is, stderr behind `[stderr] `) and our notes
// (how the agent exited, timeout, cancel, verify), so the same analysis gives the real outcome and spend.
// What the agent printed that the dead controller had not copied into the log is still in its spool files:
// they are folded into the log first (see foldSpool).
import { createReadStream, existsSync } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { episodeResult } from '../../api/episode-result.ts';
import type { EpisodeResult } from '../../api/episode-result.ts';
import { createOutputAnalyzer } from '../output/index.ts';
import type { AnalyzerOptions, ProcessExit } from '../output/types.ts';
import { completionClaim } from '../../reconciler/outcome.ts';
import { EpisodeLog, NOTE_PREFIX, NOTE_SUFFIX, STDERR_PREFIX, spoolFiles } from './episode-log.ts';
import { claimFacts, claimRules } from './episode-end.ts';
import { episodeOutputs, outputsFileFor } from './outputs-file.ts';

export interface LogRecoveryOptions {
  analyzer: AnalyzerOptions;
  /** spec.completion.verify: a completion claim needs its verdict in the log. */
  verify?: string[];
  onExitZero: boolean;
}

export interface RecoveredEpisode {
  result: EpisodeResult;
  /** The log's last write: about when the episode ended. */
  finishedAt?: string;
  /** How the end was decided, for the log line. */
  how: 'exited' | 'result' | 'unfinished' | 'no-log';
}

interface LogNotes {
  exit?: ProcessExit;
  timedOut: boolean;
  cancelled: boolean;
  verifyStarted: boolean;
  /** Set once verify's end is noted: its exit code (null: it did not run to an exit). */
  verifyExitCode?: number | null;
}

const INTERRUPTED = 'controller restarted mid-episode';
// Before the agent's whole output, folded in from its spool files: what the log showed of it before is partial.
const FOLDED = 'the controller stopped before it had logged all of the agent output; all of it follows';
// A line starting like a note but longer than this is agent output, not ours.
const MAX_NOTE_BYTES = 4096;
const HEAD_BYTES = Math.max(Buffer.byteLength(STDERR_PREFIX), Buffer.byteLength(NOTE_PREFIX));

/**
 * Re-analyses the log. Finished — an exit note, or the agent's final result (exit code not known: the one
 * its CLI gives that result, 0 or 1) — is classified like a live episode; anything else stays interrupted
 * with the cost and tokens the log shows. A completion claim whose verify has no verdict in the log is
 * interrupted too: nothing says the work passed.
 */
export async function recoverEpisodeFromLog(logFile: string, opts: LogRecoveryOptions): Promise<RecoveredEpisode> {
  // Two analyzers fed alike: `probe` tells whether the agent reported an error, which decides the exit code
  // to classify with when no exit note survived.
  let main = createOutputAnalyzer(opts.analyzer);
  let probe = createOutputAnalyzer(opts.analyzer);
  const analyzers = {
    write(bytes: Buffer, stream: 'stdout' | 'stderr') {
      main.write(bytes, stream);
      probe.write(bytes, stream);
    },
    reset() {
      main = createOutputAnalyzer(opts.analyzer);
      probe = createOutputAnalyzer(opts.analyzer);
    },
  };
  let notes: LogNotes;
  let finishedAt: string | undefined;
  try {
    finishedAt = await lastWrite(logFile); // before the fold writes to the log
    await foldSpool(logFile);
    notes = await readLog(logFile, analyzers);
  } catch {
    return { result: episodeResult({ exitCode: null, interrupted: true, message: INTERRUPTED }), how: 'no-log' };
  }
  const seen = probe.finish({ exitCode: 0 });
  const exit: ProcessExit | undefined =
    notes.exit ?? (probe.sawFinal() ? { exitCode: seen.agentError ? 1 : 0 } : undefined);
  const analysis = main.finish(exit ?? { exitCode: null, signal: 'SIGKILL' });
  // What it published survives the kill: its final answer is in the log, its outputs file by the log.
  const published = await episodeOutputs(analysis.outputs, outputsFileFor(logFile));
  const spend = { costUSD: analysis.costUSD, tokens: analysis.tokens, format: analysis.format, ...published };
  const interrupted = (message = INTERRUPTED): RecoveredEpisode => ({
    result: episodeResult({ exitCode: null, interrupted: true, message, ...spend }),
    finishedAt,
    how: 'unfinished',
  });
  if (!exit) return interrupted();
  const exitFields = { exitCode: exit.exitCode, ...(exit.signal ? { signal: exit.signal } : {}) };
  if (notes.timedOut || notes.cancelled) {
    const message = notes.timedOut ? 'timed out (recorded from the episode log)' : 'cancelled';
    return {
      result: episodeResult({ ...exitFields, timedOut: notes.timedOut, cancelled: notes.cancelled, message, ...spend }),
      finishedAt,
      how: 'exited',
    };
  }
  const claimsDone = completionClaim(claimFacts(exit, analysis), claimRules(opts)) !== undefined;
  const needsVerify = claimsDone && opts.verify !== undefined && opts.verify.length > 0;
  if (needsVerify && notes.verifyExitCode === undefined)
    return interrupted('the agent finished but its verify had not when the controller stopped');
  return {
    result: episodeResult({
      ...exitFields,
      ...spend,
      agentError: analysis.agentError,
      errorClass: analysis.errorClass,
      ...(analysis.resetAt ? { resetAt: analysis.resetAt } : {}),
      ...(analysis.completion ? { completion: analysis.completion } : {}),
      // What the agent's final text says (RALPH_STATUS, completion keywords), as a live episode records it.
      ...(analysis.ralph || analysis.keywords
        ? { evidence: { ralph: analysis.ralph, completionKeywords: analysis.keywords } }
        : {}),
      ...(needsVerify ? { verifyExitCode: notes.verifyExitCode } : {}),
      ...(analysis.message ? { message: analysis.message } : {}),
    }),
    finishedAt,
    how: notes.exit ? 'exited' : 'result',
  };
}

/** When the log or the agent's spool files were last written; throws when there is none of them. */
async function lastWrite(logFile: string): Promise<string> {
  const spool = spoolFiles(logFile, 'agent');
  const times = await Promise.all(
    [logFile, spool.stdout, spool.stderr].map((f) =>
      stat(f).then(
        (s) => s.mtimeMs,
        () => undefined,
      ),
    ),
  );
  const known = times.filter((t) => t !== undefined);
  if (known.length === 0) throw new Error(`no log: ${logFile}`);
  return new Date(Math.max(...known)).toISOString();
}

/**
 * Appends the agent's spool files, when a dead controller left them, to the log behind the FOLDED note (the
 * analysis starts over there), then removes them and verify's: a verify cut short has no verdict anyway.
 * A crash in the middle leaves the spool files, and the next fold appends them again behind a new note.
 */
async function foldSpool(logFile: string): Promise<void> {
  const spool = spoolFiles(logFile, 'agent');
  if (existsSync(spool.stdout) || existsSync(spool.stderr)) {
    const log = new EpisodeLog(logFile);
    log.note(`\n${NOTE_PREFIX}${FOLDED}${NOTE_SUFFIX}\n`);
    // One spool after the other: the two files' read streams would interleave in whatever order the disk answers.
    const [stdout, stderr] = [spool.stdout, spool.stderr].map((f) => (existsSync(f) ? createReadStream(f) : empty()));
    await log.follow(stdout, empty(), () => {})();
    await log.follow(empty(), stderr, () => {})();
    await log.close();
    if (log.noRoom) return; // the spool files stay: they hold what the log could not
  }
  const verify = spoolFiles(logFile, 'verify');
  const gate = spoolFiles(logFile, 'gate');
  const files = [spool.stdout, spool.stderr, verify.stdout, verify.stderr, gate.stdout, gate.stderr];
  await Promise.all(files.map((f) => rm(f, { force: true })));
}

function empty(): Readable {
  return Readable.from([]);
}

interface AnalyzerSink {
  write(bytes: Buffer, stream: 'stdout' | 'stderr'): void;
  /** The complete output follows: forget what came before. */
  reset(): void;
}

/** Streams the log: agent output to the analyzers (until verify starts), our notes parsed. */
async function readLog(file: string, analyzers: AnalyzerSink): Promise<LogNotes> {
  const notes: LogNotes = { timedOut: false, cancelled: false, verifyStarted: false };
  let kind: 'stdout' | 'stderr' | 'note' | undefined;
  let head: Buffer[] = [];
  let note: Buffer[] = [];
  let noteBytes = 0;
  const deliver = (bytes: Buffer, stream: 'stdout' | 'stderr') => {
    if (notes.verifyStarted || bytes.length === 0) return; // verify's output was never the agent's
    analyzers.write(bytes, stream);
  };
  const decide = (bytes: Buffer) => {
    if (startsWith(bytes, STDERR_PREFIX)) {
      kind = 'stderr';
      deliver(bytes.subarray(Buffer.byteLength(STDERR_PREFIX)), 'stderr');
    } else if (startsWith(bytes, NOTE_PREFIX)) {
      kind = 'note';
      note = [bytes];
      noteBytes = bytes.length;
    } else {
      kind = 'stdout';
      deliver(bytes, 'stdout');
    }
  };
  const lineEnded = () => {
    if (kind === 'note') {
      const text = Buffer.concat(note).toString('utf8').replace(/\n$/, '');
      if (text === `${NOTE_PREFIX}${FOLDED}${NOTE_SUFFIX}`) analyzers.reset();
      else if (!readNote(text, notes)) deliver(Buffer.concat(note), 'stdout');
      note = [];
    }
    kind = undefined;
  };
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    let at = 0;
    while (at < chunk.length) {
      const nl = chunk.indexOf(0x0a, at);
      const end = nl < 0 ? chunk.length : nl + 1;
      let piece = chunk.subarray(at, end);
      at = end;
      if (kind === undefined) {
        head.push(piece);
        piece = Buffer.concat(head);
        if (piece.length < HEAD_BYTES && nl < 0) continue; // too short to tell yet
        head = [];
        decide(piece);
      } else if (kind === 'note') {
        note.push(piece);
        noteBytes += piece.length;
        if (noteBytes > MAX_NOTE_BYTES) {
          kind = 'stdout'; // not one of ours
          deliver(Buffer.concat(note), 'stdout');
          note = [];
        }
      } else {
        deliver(piece, kind);
      }
      if (nl >= 0) lineEnded();
    }
  }
  if (kind === undefined && head.length > 0) decide(Buffer.concat(head));
  lineEnded();
  return notes;
}

/** Applies one of our notes; false when the line is not one. */
function readNote(line: string, notes: LogNotes): boolean {
  if (!line.startsWith(NOTE_PREFIX) || !line.endsWith(NOTE_SUFFIX)) return false;
  const text = line.slice(NOTE_PREFIX.length, line.length - NOTE_SUFFIX.length);
  let m: RegExpExecArray | null;
  if ((m = /^agent exited (-?\d+)$/.exec(text))) notes.exit = { exitCode: Number(m[1]) };
  else if ((m = /^agent killed by (\S+)$/.exec(text))) notes.exit = { exitCode: null, signal: m[1] };
  else if (text.startsWith('timed out after ')) notes.timedOut = true;
  else if (/^cancelled[;( ]/.test(text)) notes.cancelled = true;
  else if (text.startsWith('verify [')) notes.verifyStarted = true;
  else if (!notes.verifyStarted) return false;
  else if (text === 'verify passed') notes.verifyExitCode = 0;
  else if ((m = /^verify exited (-?\d+)/.exec(text))) notes.verifyExitCode = Number(m[1]);
  else if (text.startsWith('verify ')) notes.verifyExitCode = null;
  else return false;
  return true;
}

function startsWith(bytes: Buffer, prefix: string): boolean {
  const p = Buffer.from(prefix);
  return bytes.length >= p.length && bytes.subarray(0, p.length).equals(p);
}
