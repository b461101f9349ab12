// A node:test reporter beside `spec`: once the run ends, the ten slowest test files and their durations
// (each file's own summary: the wall time of its process) and each suite's total, so the next slowdown is
// seen before it fails.
//   node --test --test-reporter=spec --test-reporter-destination=stdout \
//     --test-reporter=./scripts/test-reporters/slowest.ts --test-reporter-destination=FILE ...
import path from 'node:path';

export const SHOWN = 10;

export interface FileDuration {
  file: string;
  ms: number;
  failed: boolean;
}

/** The table of per-file durations: slowest first, paths relative to cwd. */
export function slowestTable(files: readonly FileDuration[], cwd = process.cwd(), shown = SHOWN): string {
  const rows = [...files].sort((a, b) => b.ms - a.ms).slice(0, shown);
  const lines = rows.map(
    (r) => `${(r.ms / 1000).toFixed(1).padStart(8)} s  ${path.relative(cwd, r.file)}${r.failed ? '  (failed)' : ''}`,
  );
  return `slowest ${rows.length} of ${files.length} test files (wall time of each file's process):\n${lines.join('\n')}\n`;
}

/** Each suite's time: the files' durations summed by their folder (test/real-agents, test/gitea…), largest first. */
export function suitesTable(files: readonly FileDuration[], cwd = process.cwd()): string {
  const sums = new Map<string, { ms: number; count: number }>();
  for (const f of files) {
    const dir = path.dirname(path.relative(cwd, f.file));
    const sum = sums.get(dir) ?? { ms: 0, count: 0 };
    sums.set(dir, { ms: sum.ms + f.ms, count: sum.count + 1 });
  }
  const rows = [...sums].sort((a, b) => b[1].ms - a[1].ms);
  const lines = rows.map(([dir, s]) => `${(s.ms / 1000).toFixed(1).padStart(8)} s  ${dir} (${s.count} files)`);
  return `time per suite (sum of its files' wall times; files run two at a time (package.json's --test-concurrency)):\n${lines.join('\n')}\n`;
}

interface SummaryEvent {
  type: string;
  data: { file?: string; duration_ms: number; counts: { failed: number; cancelled: number } };
}

export default async function* slowest(source: AsyncIterable<SummaryEvent>): AsyncGenerator<string> {
  const files: FileDuration[] = [];
  for await (const event of source) {
    // A summary with a file is one file's; the last, without one, is the whole run's.
    if (event.type !== 'test:summary' || !event.data.file) continue;
    const { counts, duration_ms: ms, file } = event.data;
    files.push({ file, ms, failed: counts.failed + counts.cancelled > 0 });
  }
  yield slowestTable(files);
  yield suitesTable(files);
}
