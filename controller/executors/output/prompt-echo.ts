// Copies of the prompt in an agent's answer. Text is compared as words (letters, digits, _; lowercased), so
// a copy is recognised whatever precedes it on its line, however it is re-wrapped, indented or quoted ("> ").
// Whole echoes are cut out; a signal (the sentinel, a status block, a completion phrase) that stands inside
// a copy of the prompt's text around it is blanked, so an agent that prints its instructions back never
// gives the signal those instructions describe.
import { stripAnsi } from './rules.ts';

/** A signal inside a copy: the copy reaches this many words beyond it on one side, or covers all of the
 * prompt's sentence (or line) around it. */
const LONG_CONTEXT_WORDS = 6;
/** A sentence shorter than this ("Print <promise>DONE</promise>") is not told from the agent's own words. */
const MIN_UNIT_WORDS = 2;
/**
 * Places in the prompt examined over all signals of one answer (a prompt and an answer that repeat a phrase
 * thousands of times); past it, signals count as copies: the leash holds, at the cost of an episode.
 */
const MAX_PLACES = 100_000;
const WORD = /[\p{L}\p{N}_]+/gu;
/** Between two words of the prompt: a sentence or a line ends. */
const UNIT_BREAK = /\n|[.!?;](?:\s|$)/;
/** Around a cut copy: what else its lines may hold and still go with it (never `<`: a sentinel may follow). */
const JUNK = /[^\p{L}\p{N}_<\n]/u;
/** A shorter prompt ("Continue.") is cut only where it stands on lines of its own, as before. */
const MIN_INLINE_ECHO_WORDS = 8;

interface Words {
  ids: Int32Array;
  starts: Int32Array;
  ends: Int32Array;
}

type Vocabulary = Map<string, number>;

function words(text: string, vocabulary: Vocabulary): Words {
  const ids: number[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  for (const m of text.matchAll(WORD)) {
    const word = m[0].toLowerCase();
    let id = vocabulary.get(word);
    if (id === undefined) vocabulary.set(word, (id = vocabulary.size));
    ids.push(id);
    starts.push(m.index);
    ends.push(m.index + m[0].length);
  }
  return { ids: Int32Array.from(ids), starts: Int32Array.from(starts), ends: Int32Array.from(ends) };
}

/** KMP failure table. */
function failureTable(pattern: Int32Array): Int32Array {
  const fail = new Int32Array(pattern.length);
  for (let i = 1, k = 0; i < pattern.length; i++) {
    while (k > 0 && pattern[i] !== pattern[k]) k = fail[k - 1] as number;
    if (pattern[i] === pattern[k]) k++;
    fail[i] = k;
  }
  return fail;
}

/** Word ranges [first, last] of `text` that are the whole of `pattern`. */
function wholeCopies(text: Int32Array, pattern: Int32Array): [number, number][] {
  const found: [number, number][] = [];
  const fail = failureTable(pattern);
  for (let i = 0, k = 0; i < text.length; i++) {
    while (k > 0 && text[i] !== pattern[k]) k = fail[k - 1] as number;
    if (text[i] === pattern[k]) k++;
    if (k === pattern.length) {
      found.push([i - k + 1, i]);
      k = 0;
    }
  }
  return found;
}

/** How many leading words of `text` are the last words of `pattern` (a tail that starts inside an echo). */
function overlapAtStart(text: Int32Array, pattern: Int32Array): number {
  if (text.length === 0) return 0;
  const fail = failureTable(text);
  let k = 0;
  for (const id of pattern) {
    while (k > 0 && (k === text.length || id !== text[k])) k = fail[k - 1] as number;
    if (id === text[k]) k++;
  }
  return k;
}

/**
 * Removes char ranges with the junk after them; a range that leaves only junk on its lines takes them along.
 * `onlyWholeLines`: other ranges stay (a prompt of a few words is also said in the agent's own sentences).
 */
function cut(text: string, ranges: [number, number][], onlyWholeLines: boolean): string {
  let result = '';
  let from = 0;
  for (const [start, wordsEnd] of ranges) {
    let lineStart = start;
    while (lineStart > from && JUNK.test(text[lineStart - 1] as string)) lineStart--;
    let end = wordsEnd;
    while (end < text.length && JUNK.test(text[end] as string)) end++;
    const wholeLines = (lineStart === 0 || text[lineStart - 1] === '\n') && (end === text.length || text[end] === '\n');
    if (onlyWholeLines && !wholeLines) continue;
    result += wholeLines ? text.slice(from, lineStart) : `${text.slice(from, start)}\n`;
    from = wholeLines && end < text.length ? end + 1 : end;
  }
  return result + text.slice(from);
}

/**
 * Plain text without whole echoes of the prompt (word for word, wherever they start). `cutAtStart`: the text
 * is a tail whose start may lie inside an echo, so its first (possibly partial) line is dropped and leading
 * words equal to the prompt's last words are removed too. Where an echo is cut, ANSI colours are removed.
 */
export function withoutPromptEcho(text: string, prompt: string | undefined, cutAtStart = false): string {
  // Text with no echo in it comes back as written (colours too: the message shows them, escaped).
  const asWritten = cutAtStart ? text.slice(text.indexOf('\n') + 1) : text;
  if (!prompt) return asWritten;
  let plain = stripAnsi(text);
  if (cutAtStart) plain = plain.slice(plain.indexOf('\n') + 1);
  const { vocabulary, words: prompted } = promptOf(prompt);
  const pattern = prompted.ids;
  const answer = words(plain, vocabulary);
  if (pattern.length === 0 || answer.ids.length === 0) return asWritten;
  const copies = wholeCopies(answer.ids, pattern);
  const lead = cutAtStart ? overlapAtStart(answer.ids, pattern) : 0;
  if (lead > 0 && (copies.length === 0 || (copies[0] as [number, number])[0] >= lead)) copies.unshift([0, lead - 1]);
  if (copies.length === 0) return asWritten;
  const ranges = copies.map(([a, b]): [number, number] => [answer.starts[a] as number, answer.ends[b] as number]);
  return cut(plain, ranges, pattern.length < MIN_INLINE_ECHO_WORDS);
}

/** The prompt's words, each with the first and last word of its sentence or line. */
interface PromptWords extends Words {
  unitStart: Int32Array;
  unitEnd: Int32Array;
}

function promptWords(prompt: string, vocabulary: Vocabulary): PromptWords {
  const w = words(prompt, vocabulary);
  const n = w.ids.length;
  const unitStart = new Int32Array(n);
  const unitEnd = new Int32Array(n);
  for (let i = 1; i < n; i++) {
    const gap = prompt.slice(w.ends[i - 1], w.starts[i]);
    unitStart[i] = UNIT_BREAK.test(gap) ? i : (unitStart[i - 1] as number);
  }
  for (let i = n - 1; i >= 0; i--) {
    unitEnd[i] = i + 1 < n && unitStart[i + 1] === unitStart[i] ? (unitEnd[i + 1] as number) : i;
  }
  return { ...w, unitStart, unitEnd };
}

/** Answers add their words to the vocabulary; past this many, it starts afresh. */
const MAX_VOCABULARY = 1_000_000;
let lastPrompt: { prompt: string; vocabulary: Vocabulary; words: PromptWords } | undefined;

/** The prompt's words: one episode's end reads stdout, stderr and the answer against the same prompt. */
function promptOf(prompt: string): { vocabulary: Vocabulary; words: PromptWords } {
  if (lastPrompt?.prompt !== prompt || lastPrompt.vocabulary.size > MAX_VOCABULARY) {
    const vocabulary: Vocabulary = new Map();
    lastPrompt = { prompt, vocabulary, words: promptWords(prompt, vocabulary) };
  }
  return lastPrompt;
}

/** Equal words going outward from answer[a] and prompt[p] (step -1 or +1), at most `max`. */
function extent(answer: Int32Array, a: number, prompt: Int32Array, p: number, step: number, max: number): number {
  let n = 0;
  while (n < max) {
    const i = a + step * (n + 1);
    const j = p + step * (n + 1);
    if (i < 0 || j < 0 || i >= answer.length || j >= prompt.length || answer[i] !== prompt[j]) break;
    n++;
  }
  return n;
}

/**
 * Whether answer words [a, b] stand inside a copy of the prompt's text around the same words. `places`: where
 * each word occurs in the prompt; the span is looked up by its rarest word.
 */
function insideCopy(
  answer: Int32Array,
  [a, b]: [number, number],
  prompt: PromptWords,
  places: ReadonlyMap<number, number[]>,
  budget: { places: number },
): boolean {
  const len = b - a + 1;
  let anchor = a;
  for (let k = a + 1; k <= b; k++) {
    if ((places.get(answer[k] as number)?.length ?? 0) < (places.get(answer[anchor] as number)?.length ?? 0))
      anchor = k;
  }
  const at = places.get(answer[anchor] as number) ?? [];
  for (let i = 0; i < at.length; i++) {
    if (--budget.places < 0) return true;
    const p = (at[i] as number) - (anchor - a);
    if (p < 0 || p + len > prompt.ids.length) continue;
    let same = true;
    for (let k = 0; k < len && same; k++) same = answer[a + k] === prompt.ids[p + k];
    if (!same) continue;
    const left = extent(answer, a, prompt.ids, p, -1, LONG_CONTEXT_WORDS);
    const right = extent(answer, b, prompt.ids, p + len - 1, 1, LONG_CONTEXT_WORDS);
    if (left >= LONG_CONTEXT_WORDS || right >= LONG_CONTEXT_WORDS) return true;
    // The rest of the prompt's sentence (or line) around the signal; a signal on a line of its own, the
    // line before or after it ("When every test passes, print:").
    const n = prompt.ids.length;
    const q = p + len - 1;
    const before = p - (prompt.unitStart[p] as number);
    const after = (prompt.unitEnd[q] as number) - q;
    if (before + after >= MIN_UNIT_WORDS && left >= before && right >= after) return true;
    if (before + after > 0) continue;
    const previous = p > 0 ? p - (prompt.unitStart[p - 1] as number) : 0;
    const next = q + 1 < n ? (prompt.unitEnd[q + 1] as number) - q : 0;
    if ((previous >= MIN_UNIT_WORDS && left >= previous) || (next >= MIN_UNIT_WORDS && right >= next)) return true;
  }
  return false;
}

/**
 * The text with every match of `signals` blanked (replaced by "…") where it stands inside a copy of the
 * prompt: the copied words reach LONG_CONTEXT_WORDS beyond it, or cover the rest of the prompt's sentence
 * (or line) that holds it. A signal alone (`<promise>DONE</promise>` on its own line) is never a copy.
 */
export function withoutEchoedSignals(text: string, prompt: string | undefined, signals: RegExp[]): string {
  if (!prompt) return text;
  const spans: [number, number][] = [];
  for (const signal of signals) {
    for (const m of text.matchAll(new RegExp(signal.source, `${signal.flags.replace('g', '')}g`))) {
      if (m[0] !== '') spans.push([m.index, m.index + m[0].length]);
    }
  }
  if (spans.length === 0) return text;
  const { vocabulary, words: prompted } = promptOf(prompt);
  const answer = words(text, vocabulary);
  const wordSpans = spans
    .map(([s, e]): [number, number, number, number] => [s, e, firstWordFrom(answer, s), lastWordBefore(answer, e)])
    .filter(([, , a, b]) => a <= b);
  if (wordSpans.length === 0) return text;
  const budget = { places: MAX_PLACES };
  const places = new Map<number, number[]>();
  for (const [, , a, b] of wordSpans) for (let k = a; k <= b; k++) places.set(answer.ids[k] as number, []);
  prompted.ids.forEach((id, i) => {
    places.get(id)?.push(i);
  });
  const blanked = wordSpans
    .filter(([, , a, b]) => insideCopy(answer.ids, [a, b], prompted, places, budget))
    .map(([s, e]): [number, number] => [s, e])
    .sort((x, y) => x[0] - y[0]);
  let result = '';
  let from = 0;
  for (const [s, e] of blanked) {
    if (s < from) {
      from = Math.max(from, e); // overlapping signals: one blank
      continue;
    }
    result += `${text.slice(from, s)}…`;
    from = e;
  }
  return result + text.slice(from);
}

function firstWordFrom(w: Words, at: number): number {
  let lo = 0;
  let hi = w.starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((w.starts[mid] as number) < at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function lastWordBefore(w: Words, at: number): number {
  let lo = 0;
  let hi = w.ends.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((w.ends[mid] as number) <= at) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}
