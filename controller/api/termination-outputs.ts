// Outputs in the termination message (see termination-message.ts for the budget): the ones that fit, and a
// note naming the ones left out for room beside what the episode's own note says.
import { joinNotes } from './outputs.ts';

/** The facts with the outputs kept, and a note naming the ones left out for room. */
export function withOutputs(
  facts: object,
  kept: Array<[string, string]>,
  note: string | undefined,
  dropped: string[],
): object {
  const roomNote = dropped.length > 0 ? `outputs left out of the termination message: ${dropped.join(', ')}` : '';
  const outputsNote = joinNotes(note, roomNote);
  return {
    ...facts,
    ...(kept.length > 0 ? { outputs: Object.fromEntries(kept) } : {}),
    ...(outputsNote ? { outputsNote } : {}),
  };
}
