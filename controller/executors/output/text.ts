// Completion signals in an agent's final text (its one-line summaries are api/bounds.ts's headLine/tailLine).

export type Completion = 'promise' | 'exitSignal';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `<promise>VALUE</promise>`, spaces inside allowed. */
export function promisePattern(promise: string): RegExp {
  return new RegExp(`<promise>\\s*${escapeRegExp(promise.trim())}\\s*</promise>`);
}

export function hasPromise(text: string, promise: string): boolean {
  if (promise === '') return false;
  return promisePattern(promise).test(text);
}

const STATUS_START = '---RALPH_STATUS---';
const STATUS_END = '---END_RALPH_STATUS---';

/** EXIT_SIGNAL: true in the LAST RALPH_STATUS block (earlier blocks are superseded). */
export function hasExitSignal(text: string): boolean {
  const start = text.lastIndexOf(STATUS_START);
  if (start === -1) return false;
  const end = text.indexOf(STATUS_END, start);
  const block = text.slice(start + STATUS_START.length, end === -1 ? undefined : end);
  return /^\s*EXIT_SIGNAL\s*:\s*\**\s*true\b/im.test(block);
}

export function findCompletion(finalText: string | undefined, promise: string): Completion | undefined {
  if (!finalText) return undefined;
  if (hasPromise(finalText, promise)) return 'promise';
  if (hasExitSignal(finalText)) return 'exitSignal';
  return undefined;
}
