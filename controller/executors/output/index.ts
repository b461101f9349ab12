// Reads one episode's stdout/stderr incrementally and distils an OutputAnalysis. Memory is bounded whatever
// the agent prints: lines are split with a cap, JSON events are folded into a few running values as they
// arrive, and only fixed-size tails of raw text are kept for sentinel and error search. Bad input never
// throws; output that is not recognisable JSON is analysed as text.
import type { OutputFormat } from '../../api/episode-result.ts';
import { createByteTail } from './byte-tail.ts';
import { createClaudeReader } from './claude.ts';
import { classifyFailure } from './classify.ts';
import { createCodexReader } from './codex.ts';
import { cliOfCommand, detectFormat } from './detect.ts';
import type { FormatFacts, FormatReader, JsonFormat } from './format-reader.ts';
import { createGeminiReader } from './gemini.ts';
import { asObject, MAX_EPISODE_COST_USD, zeroTokens } from './json-fields.ts';
import { createJsonLineParser } from './json-lines.ts';
import { outputTags } from '../../api/outputs.ts';
import { answerWithoutPrompt, completionKeywords, ralphStatus, withoutPromptEcho } from './final-answer.ts';
import { createLineSplitter, DEFAULT_MAX_LINE_BYTES } from './line-splitter.ts';
import { costFromTokens } from './pricing.ts';
import { lastMeaningfulLine, stripAnsi } from './rules.ts';
import { findCompletion } from './text.ts';
import { headLine, tailLine } from '../../api/bounds.ts';
import type { AnalyzerOptions, OutputAnalysis, OutputAnalyzer, ProcessExit } from './types.ts';

export type { AnalyzerOptions, OutputAnalysis, OutputAnalyzer, ProcessExit } from './types.ts';

export interface AnalyzerLimits {
  /** Longer lines are dropped (and counted). */
  maxLineBytes?: number;
  /** Raw tail kept per stream for text analysis. */
  tailBytes?: number;
}

export interface AnalyzerStats {
  stdoutBytes: number;
  stderrBytes: number;
  /** Non-empty stdout lines looked at (none in text mode, where lines don't matter). */
  lines: number;
  droppedLines: number;
  /** JSON objects accepted as events of the detected format. */
  events: number;
  /** Events a reader choked on (skipped). */
  badEvents: number;
}

export interface InspectableOutputAnalyzer extends OutputAnalyzer {
  stats(): AnalyzerStats;
  /** After finish(): the agent's final verdict was in the output (FormatFacts.final), so it had finished. */
  sawFinal(): boolean;
}

export const TEXT_TAIL_BYTES = 64 * 1024;
/** Non-JSON lines tolerated before 'auto' settles on text (CLIs may print a banner first). */
const DETECT_WINDOW_LINES = 50;

function createReader(format: JsonFormat): FormatReader {
  if (format === 'claude') return createClaudeReader();
  if (format === 'codex') return createCodexReader();
  return createGeminiReader();
}

export function createOutputAnalyzer(opts: AnalyzerOptions, limits: AnalyzerLimits = {}): InspectableOutputAnalyzer {
  const maxLineBytes = limits.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const tailBytes = limits.tailBytes ?? TEXT_TAIL_BYTES;
  const now = opts.now ?? (() => new Date());
  const stdoutTail = createByteTail(tailBytes);
  const stderrTail = createByteTail(tailBytes);
  // Non-JSON lines of a JSON stream: a crash or plain-text error printed among the events.
  const strayTail = createByteTail(16 * 1024);

  let mode: 'detect' | 'json' | 'text' = opts.format === 'auto' ? 'detect' : opts.format === 'text' ? 'text' : 'json';
  let reader: FormatReader | undefined = mode === 'json' ? createReader(opts.format as JsonFormat) : undefined;
  let undetected = 0;
  let lines = 0;
  let events = 0;
  let badEvents = 0;
  let finished: OutputAnalysis | undefined;
  let sawFinal = false;

  const notDetected = (): void => {
    if (mode === 'detect' && ++undetected >= DETECT_WINDOW_LINES) mode = 'text';
  };

  const onObject = (value: unknown): void => {
    const object = asObject(value);
    if (!object) return;
    if (!reader) {
      if (mode !== 'detect') return;
      const format = detectFormat(object);
      if (!format) {
        notDetected();
        return;
      }
      reader = createReader(format);
      mode = 'json';
    }
    try {
      if (reader.event(object)) events++;
    } catch {
      badEvents++;
    }
  };

  const json = createJsonLineParser(
    {
      onValue(value: unknown): void {
        // claude --output-format json --verbose prints one array of all messages.
        if (Array.isArray(value)) for (const element of value) onObject(element);
        else onObject(value);
      },
      onText(line: string): void {
        strayTail.push(Buffer.from(`${line}\n`));
        notDetected();
      },
    },
    maxLineBytes,
  );

  const splitter = createLineSplitter((line) => {
    if (mode === 'text') return;
    const text = line.toString('utf8');
    if (text.trim() === '') return;
    lines++;
    json.line(text);
  }, maxLineBytes);

  const analyse = (exit: ProcessExit): OutputAnalysis => {
    splitter.end();
    json.end();
    const facts: FormatFacts | undefined = reader && events > 0 ? reader.facts() : undefined;
    const format: OutputFormat = facts && reader ? reader.format : 'text';
    const stdoutText = stdoutTail.text();
    const stderrText = stderrTail.text();
    // JSON formats name the final answer; for plain text it is the stdout tail. Copies of the prompt in it
    // give no signal.
    const finalText = facts
      ? answerWithoutPrompt(facts.finalText, opts.prompt, opts.promise)
      : answerWithoutPrompt(stdoutText, opts.prompt, opts.promise, stdoutTail.totalBytes > tailBytes);
    const tokens = facts?.tokens ?? zeroTokens();
    const reportedCost = facts?.costUSD;
    const cost = reportedCost ?? (opts.pricing ? costFromTokens(tokens, opts.pricing) : 0);
    const agentError = facts?.agentError ?? false;
    const analysis: OutputAnalysis = {
      format,
      agentError,
      errorClass: 'none',
      completion: findCompletion(finalText, opts.promise),
      costUSD: Number.isFinite(cost) && cost > 0 ? Math.min(cost, MAX_EPISODE_COST_USD) : 0,
      tokens,
    };
    const ralph = ralphStatus(finalText);
    if (ralph) analysis.ralph = ralph;
    const keywords = opts.signals ? completionKeywords(finalText) : [];
    if (keywords.length > 0) analysis.keywords = keywords;
    const outputs = outputTags(finalText);
    if (outputs.length > 0) analysis.outputs = outputs;
    sawFinal = facts?.final === true;
    const succeeded = exit.exitCode === 0 && !agentError && exit.spawnErrorCode === undefined;
    if (succeeded) {
      analysis.message = tailLine(finalText);
      return analysis;
    }
    const verdict = classifyFailure({
      exit,
      exitCode: exit.exitCode,
      cli:
        reader?.format ?? (opts.format === 'auto' || opts.format === 'text' ? cliOfCommand(opts.command) : opts.format),
      textFormat: format === 'text',
      facts,
      // A prompt echo (codex prints it on stderr) is not the CLI's error, whatever the prompt says.
      stdout: withoutPromptEcho(stdoutText, opts.prompt),
      stderr: withoutPromptEcho(stderrText, opts.prompt),
      stray: strayTail.text(),
      now: now(),
      timeZone: opts.timeZone,
    });
    analysis.errorClass = verdict.errorClass;
    if (verdict.rule !== undefined) analysis.rule = verdict.rule;
    if (verdict.resetAt !== undefined) analysis.resetAt = verdict.resetAt;
    // The CLI's sentence; never a stack frame or a dumped object from the end of stderr.
    analysis.message =
      headLine(stripAnsi(verdict.message ?? '')) ??
      headLine(exit.spawnErrorMessage) ??
      headLine(lastMeaningfulLine(stderrText)) ??
      tailLine(finalText) ??
      (exit.signal ? `killed by ${exit.signal}` : undefined);
    return analysis;
  };

  return {
    write(chunk: Buffer | string, stream: 'stdout' | 'stderr'): void {
      if (finished) return;
      try {
        const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
        if (stream === 'stderr') {
          stderrTail.push(bytes);
          return;
        }
        stdoutTail.push(bytes);
        if (mode !== 'text') splitter.push(bytes);
      } catch {
        badEvents++; // a bug must not take the episode down; the tails still hold the text
      }
    },
    finish(exit: ProcessExit): OutputAnalysis {
      if (finished) return finished;
      try {
        finished = analyse(exit);
      } catch {
        finished = { format: 'text', agentError: false, errorClass: 'none', costUSD: 0, tokens: zeroTokens() };
      }
      return finished;
    },
    sawFinal: () => sawFinal,
    stats(): AnalyzerStats {
      return {
        stdoutBytes: stdoutTail.totalBytes,
        stderrBytes: stderrTail.totalBytes,
        lines,
        droppedLines: splitter.droppedLines,
        events,
        badEvents,
      };
    },
  };
}
