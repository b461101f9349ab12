// Episode records locally: STATE/logs/NAMESPACE/NAME/episodes.jsonl, one JSON line per finished episode,
// append-only. Each line is one write() to a file opened O_APPEND, so lines never interleave and a crash
// leaves at most a torn last line, which readers skip and the next controller cuts off before appending.
import {
  closeSync,
  existsSync,
  fstatSync,
  fsync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { AgentTaskStatus } from '../../api/agent-task.ts';
import { EpisodeRecordSchema, episodeRecordOf } from '../../api/episode-record.ts';
import type { EpisodeRecord } from '../../api/episode-record.ts';
import { deletedTaskDir, deletedTaskRoot, taskLogsDir } from '../../util/state-layout.ts';

// The tail read at start: far more than one record (a message is at most 1,000 characters).
const TAIL_BYTES = 64 * 1024;

/** The newest kept directory of a deleted task (kept until removed by hand), if any. */
export function lastDeletedTaskDir(stateDir: string, namespace: string, name: string): string | undefined {
  const dir = deletedTaskRoot(stateDir, namespace, name);
  const times = existsSync(dir) ? readdirSync(dir).sort() : [];
  return times.length > 0 ? join(dir, times[times.length - 1] as string) : undefined;
}

/** Moves the task's logs directory (episode logs, episodes.jsonl) to its deletedTaskDir; undefined: none. */
export function keepDeletedTaskLogs(stateDir: string, namespace: string, name: string, at: Date): string | undefined {
  const logs = taskLogsDir(stateDir, namespace, name);
  if (!existsSync(logs)) return undefined;
  const kept = deletedTaskDir(stateDir, namespace, name, at);
  mkdirSync(dirname(kept), { recursive: true });
  renameSync(logs, kept);
  return kept;
}

/**
 * Appends one record as one line. Returns once the line is in the file (a restarted controller reads it);
 * the fsync for a power loss goes on in the background and reports to `onSyncError`.
 */
export function appendRecord(path: string, record: EpisodeRecord, onSyncError: (err: Error) => void): void {
  const line = Buffer.from(`${JSON.stringify(record)}\n`);
  let fd: number;
  try {
    fd = openSync(path, 'a', 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    mkdirSync(dirname(path), { recursive: true });
    fd = openSync(path, 'a', 0o644);
  }
  try {
    const written = writeSync(fd, line);
    // A short write (disk full) leaves a torn line: end it, so the next record starts on a line of its own.
    if (written < line.length) {
      writeSync(fd, '\n');
      throw new Error(`${path}: short write (${written} of ${line.length} bytes)`);
    }
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  fsync(fd, (err) => {
    closeSync(fd);
    if (err) onSyncError(err);
  });
}

/** Every record in the file, one per episode number (the last line wins), oldest first; [] when none. */
export async function readRecords(path: string): Promise<EpisodeRecord[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return latestPerNumber(parseLines(text));
}

/** Parsed records of complete, valid lines; a torn or foreign line is skipped. */
function parseLines(text: string): EpisodeRecord[] {
  const records: EpisodeRecord[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const parsed = EpisodeRecordSchema.safeParse(JSON.parse(line));
      if (parsed.success) records.push(parsed.data);
    } catch {
      // a torn line: what was written of it is not a record
    }
  }
  return records;
}

function latestPerNumber(records: EpisodeRecord[]): EpisodeRecord[] {
  const byNumber = new Map<number, EpisodeRecord>();
  for (const r of records) byNumber.set(r.number, r);
  return [...byNumber.values()].sort((a, b) => a.number - b.number);
}

/**
 * At start, under the state lock: cuts off a torn last line, and appends the record of the status's last
 * episode when a crash came between writing that status and appending its record (the evidence and
 * tokens of that one episode are then unknown; its outcome, times, cost and message are in status).
 * Returns the newest episode number on file (0: none).
 */
export function recoverRecords(
  path: string,
  task: string,
  status: AgentTaskStatus,
  onSyncError: (err: Error) => void,
): number {
  let fd: number;
  try {
    fd = openSync(path, 'r+');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    fd = -1;
  }
  let newest = 0;
  if (fd >= 0) {
    try {
      const size = fstatSync(fd).size;
      const start = Math.max(0, size - TAIL_BYTES);
      const tail = Buffer.alloc(size - start);
      readSync(fd, tail, 0, tail.length, start);
      const end = tail.lastIndexOf(0x0a) + 1; // bytes after the last newline are a torn line
      if (end < tail.length && (end > 0 || start === 0)) ftruncateSync(fd, start + end);
      for (const r of parseLines(tail.subarray(0, end).toString('utf8'))) newest = Math.max(newest, r.number);
    } finally {
      closeSync(fd);
    }
  }
  const last = status.lastEpisode;
  if (!last || last.number <= newest) return newest;
  appendRecord(path, episodeRecordOf(task, last, undefined, undefined), onSyncError);
  return last.number;
}
