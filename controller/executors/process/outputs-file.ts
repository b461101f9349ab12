// The file an episode may write its outputs to ($EPISODIC_OUTPUTS): next to its log, in the state directory
// (locally) or the runner's scratch directory (in a pod), never in the workspace, and named by the episode
// alone, so a controller restarted after a kill -9 finds it as the live one would have.
import { constants } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { join, parse } from 'node:path';
import { boundOutputs, outputsNote, parseOutputsFile } from '../../api/outputs.ts';
import type { OutputPair, Outputs } from '../../api/outputs.ts';

/** Read no further: a file this large is not a handful of short values. */
export const OUTPUTS_FILE_MAX_BYTES = 64 * 1024;

/** episode-3.log → episode-3.outputs in the same directory. */
export function outputsFileFor(logFile: string): string {
  const { dir, name } = parse(logFile);
  return join(dir, `${name}.outputs`);
}

/** Before the agent starts: nothing left from an earlier start of the same episode number. */
export async function clearOutputsFile(file: string): Promise<void> {
  await rm(file, { force: true });
}

/** The file's pairs; a missing file has none. A symlink is not followed: the file is the agent's, its target need not be. */
async function readOutputsFile(file: string): Promise<{ pairs: OutputPair[]; problems: string[] }> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { pairs: [], problems: [] };
    return { pairs: [], problems: [`$EPISODIC_OUTPUTS could not be read (${code ?? 'error'})`] };
  }
  try {
    const buf = Buffer.alloc(OUTPUTS_FILE_MAX_BYTES + 1);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    if (bytesRead > OUTPUTS_FILE_MAX_BYTES)
      return { pairs: [], problems: [`$EPISODIC_OUTPUTS is larger than ${OUTPUTS_FILE_MAX_BYTES} bytes; ignored`] };
    return parseOutputsFile(buf.subarray(0, bytesRead).toString('utf8'));
  } catch (err) {
    return { pairs: [], problems: [`$EPISODIC_OUTPUTS could not be read (${(err as Error).message})`] };
  } finally {
    await handle.close();
  }
}

/**
 * What an episode published: its final answer's tags, then the file's lines (a key in both: the file's value),
 * bounded, with a note naming whatever was dropped.
 */
export async function episodeOutputs(
  tags: readonly OutputPair[] | undefined,
  file: string,
): Promise<{ outputs?: Outputs; outputsNote?: string }> {
  const fromFile = await readOutputsFile(file);
  const bounded = boundOutputs([...(tags ?? []), ...fromFile.pairs], fromFile.problems);
  const note = outputsNote(bounded.dropped);
  return { ...(bounded.outputs ? { outputs: bounded.outputs } : {}), ...(note ? { outputsNote: note } : {}) };
}
