// $EPISODIC_OPS: the file an episode's agent appends its ops to (api/ops.ts), next to the episode's log so
// it is never in the workspace. Read once the agent is done; what it holds joins the EpisodeResult.
import { open, rm } from 'node:fs/promises';
import { OPS_FILE_MAX } from '../../api/bounds.ts';
import type { EpisodeResult } from '../../api/episode-result.ts';
import { parseOps } from '../../api/ops.ts';
import type { ParsedOps } from '../../api/ops.ts';

export const OPS_ENV = 'EPISODIC_OPS';

/** episode-3.log → episode-3.ops.jsonl */
export function opsFilePath(logFile: string): string {
  return `${logFile.replace(/\.log$/, '')}.ops.jsonl`;
}

/** A leftover of an earlier run of the same number is cleared; the agent creates the file only if it has ops. */
export async function prepareOpsFile(file: string): Promise<void> {
  await rm(file, { force: true });
}

/** The file's ops; no file (or an unreadable one) is no ops. At most OPS_FILE_MAX bytes (+1 to see a cut) are read. */
export async function readOpsFile(file: string): Promise<ParsedOps> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(file, 'r');
    const buffer = Buffer.alloc(OPS_FILE_MAX + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return parseOps(buffer.subarray(0, bytesRead).toString('utf8'));
  } catch {
    return { ops: [], rejected: [] };
  } finally {
    await handle?.close();
  }
}

/** The result with the file's ops (none: unchanged). */
export async function withOpsFrom(result: EpisodeResult, file: string): Promise<EpisodeResult> {
  const parsed = await readOpsFile(file);
  return withOps(result, parsed);
}

export function withOps(result: EpisodeResult, parsed: ParsedOps): EpisodeResult {
  if (parsed.ops.length === 0 && parsed.rejected.length === 0) return result;
  return {
    ...result,
    ...(parsed.ops.length > 0 ? { ops: parsed.ops } : {}),
    ...(parsed.rejected.length > 0 ? { opsRejected: parsed.rejected } : {}),
  };
}
