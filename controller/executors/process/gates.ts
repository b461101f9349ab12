// Running a step's gates after its agent (spec.steps[].gates), in the workspace and with the episode's
// environment, as verify runs: each command without a shell, its own process group, its tree killed past
// timeoutSeconds. Per gate: fix first (its changes stay in the workspace), then check; a failing check ends
// the run, since later gates judge work that is about to change. The reconciler decides what it means.
import { clipStart, GATE_OUTPUT_MAX } from '../../api/bounds.ts';
import type { Gate, GateRun } from '../../api/gates.ts';
import { createByteTail } from '../output/byte-tail.ts';
import type { ByteTail } from '../output/byte-tail.ts';
import type { ProcessEnd } from './agent-process.ts';

/** Runs one command of a gate to its end (the caller owns the process, so a cancel reaches it). */
export type RunGateCommand = (
  argv: string[],
  timeoutMs: number,
  onOutput: (chunk: Buffer) => void,
) => Promise<ProcessEnd>;

export interface GateRunner {
  run: RunGateCommand;
  /** A note on a line of its own in the episode log. */
  note(text: string): void;
  /** The episode was cancelled meanwhile: no further command starts. */
  cancelled(): boolean;
}

/** Each gate in order until one's check fails (or the episode is cancelled). */
export async function runGates(gates: readonly Gate[], runner: GateRunner): Promise<GateRun[]> {
  const runs: GateRun[] = [];
  for (const gate of gates) {
    if (runner.cancelled()) break;
    const run = await runGate(gate, runner);
    runs.push(run);
    if (run.exitCode !== 0) break;
  }
  return runs;
}

async function runGate(gate: Gate, runner: GateRunner): Promise<GateRun> {
  const started = Date.now();
  const timeoutMs = gate.timeoutSeconds * 1000;
  const tail = createByteTail(GATE_OUTPUT_MAX * 4); // bytes: a tail of GATE_OUTPUT_MAX characters fits
  let fixExitCode: number | null | undefined;
  if (gate.fix) {
    runner.note(`gate ${gate.name}: fix ${JSON.stringify(gate.fix)}`);
    const fix = await runner.run(gate.fix, timeoutMs, (chunk) => tail.push(chunk));
    fixExitCode = fix.exitCode;
    runner.note(`gate ${gate.name}: fix ${describe(fix, gate)}`);
  }
  const base = { name: gate.name, ...(gate.fix ? { fixExitCode } : {}) };
  if (runner.cancelled()) return { ...base, exitCode: null, durationMs: Date.now() - started, output: text(tail) };
  runner.note(`gate ${gate.name}: check ${JSON.stringify(gate.check)}`);
  const check = await runner.run(gate.check, timeoutMs, (chunk) => tail.push(chunk));
  runner.note(`gate ${gate.name}: check ${describe(check, gate)}`);
  const exitCode = check.timedOut || check.cancelled ? null : check.exitCode;
  const spawnError = check.spawnErrorMessage ? `${check.spawnErrorMessage}\n` : '';
  return {
    ...base,
    exitCode,
    ...(check.timedOut ? { timedOut: true } : {}),
    durationMs: Date.now() - started,
    output: clipStart(`${text(tail)}${spawnError}`, GATE_OUTPUT_MAX),
  };
}

function describe(end: ProcessEnd, gate: Gate): string {
  if (end.spawnErrorMessage) return `could not start: ${end.spawnErrorMessage}`;
  if (end.timedOut) return `timed out after ${gate.timeoutSeconds}s; process tree killed`;
  if (end.cancelled) return 'cancelled';
  if (end.exitCode === 0) return 'passed';
  return end.exitCode === null ? `killed by ${end.signal ?? 'a signal'}` : `exited ${end.exitCode}`;
}

function text(tail: ByteTail): string {
  return clipStart(tail.text(), GATE_OUTPUT_MAX);
}
