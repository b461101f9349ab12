// The EpisodeResult as a pod termination message. The kubelet keeps at most 4096 bytes of it, so the
// runner shortens the gates' output tails first, then leaves out outputs, then shortens the message until
// the JSON fits, and the controller decodes whatever it finds there without ever throwing: a runner killed
// mid-write or an image without our runner leaves garbage or nothing.
import { clipStart, ELLIPSIS, EPISODE_MESSAGE_MAX, OPS_TERMINATION_BUDGET } from './bounds.ts';
import { TERMINATION_MESSAGE_LIMIT } from './episode-config.ts';
import { EpisodeResultSchema } from './episode-result.ts';
import type { EpisodeResult } from './episode-result.ts';
import { reviewCountsOnly } from './review.ts';
import { fitOpsToBudget, withoutOps } from './termination-ops.ts';
import { withOutputs } from './termination-outputs.ts';

const TRUNCATED_NOTE = '(termination message was truncated)';
/** The message keeps at least this many characters before outputs are left out to make room. */
export const MESSAGE_FLOOR = 200;
// Enough to step back over the trailing fields of a cut-off message; bounded so garbage stays cheap.
const MAX_REPAIR_ATTEMPTS = 64;

/**
 * Compact JSON of the result, at most `limitBytes` UTF-8 bytes. Ops get their budget first; then gate output
 * tails give way, then outputs (see encodeFitted), then the message.
 */
export function encodeTerminationMessage(given: EpisodeResult, limitBytes = TERMINATION_MESSAGE_LIMIT): string {
  // If even the facts alone do not fit with the ops, they give way (said in opsRejected).
  const result = fitOpsToBudget(given, Math.min(OPS_TERMINATION_BUDGET, limitBytes / 2));
  const encoded = encodeFitted(result, limitBytes);
  if (byteLength(encoded) <= limitBytes) return encoded;
  // Review items give way before ops do: their counts stay, so status.review still says how many.
  const counted = withReviewCounted(result);
  const again = encodeFitted(counted, limitBytes);
  return byteLength(again) <= limitBytes || !counted.ops ? again : encodeFitted(withoutOps(counted), limitBytes);
}

function withReviewCounted(result: EpisodeResult): EpisodeResult {
  const review = result.evidence?.review;
  return review ? { ...result, evidence: { ...result.evidence, review: reviewCountsOnly(review) } } : result;
}

/**
 * Gate output tails give way first (their verdicts stay). Outputs stay whole unless the message would have to
 * be cut below MESSAGE_FLOOR characters for them: then they are dropped whole, the last published first, each
 * named in outputsNote. Then the message is shortened to fit.
 */
function encodeFitted(result: EpisodeResult, limitBytes: number): string {
  const { message, outputs, outputsNote, ...facts } = fitGateOutputs(result, limitBytes);
  const kept = Object.entries(outputs ?? {});
  const dropped: string[] = [];
  for (;;) {
    const body = withOutputs(facts, kept, outputsNote, dropped);
    const floor = kept.length > 0 ? MESSAGE_FLOOR : 0;
    const fitted = fitMessage(body, message, limitBytes, floor);
    if (fitted !== undefined) return fitted;
    const last = kept.pop();
    if (!last) return JSON.stringify(body);
    dropped.unshift(last[0]);
  }
}

/** `body` with the message, cut to fit `limitBytes` but not below `floor` characters; undefined when it cannot. */
function fitMessage(body: object, message: string | undefined, limitBytes: number, floor: number): string | undefined {
  // message last: if anything ever cuts the text, only the message is lost (see decode).
  const encode = (m: string | undefined) => JSON.stringify(m === undefined ? body : { ...body, message: m });
  const full = encode(message);
  if (byteLength(full) <= limitBytes) return full;
  if (message === undefined) return undefined;

  // Longest prefix (in code points, so no surrogate pair is split) that still fits.
  const chars = Array.from(message);
  let lo = 0;
  let hi = chars.length - 1;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (byteLength(encode(chars.slice(0, mid).join('') + ELLIPSIS)) <= limitBytes) lo = mid;
    else hi = mid - 1;
  }
  if (lo < Math.min(floor, chars.length)) return undefined;
  const shortened = encode(chars.slice(0, lo).join('') + ELLIPSIS);
  if (byteLength(shortened) <= limitBytes) return shortened;
  const bare = encode(undefined);
  return floor === 0 && byteLength(bare) <= limitBytes ? bare : undefined;
}

/**
 * The result with every gate output cut to the longest tail that lets the whole result fit (the verdicts, exit
 * codes and the message matter more than the output); without outputs when even that does not fit.
 */
function fitGateOutputs(result: EpisodeResult, limitBytes: number): EpisodeResult {
  const gates = result.gates;
  if (!gates?.length || byteLength(JSON.stringify(result)) <= limitBytes) return result;
  const withTails = (chars: number): EpisodeResult => ({
    ...result,
    gates: gates.map(({ output, ...run }) =>
      chars > 0 && output ? { ...run, output: clipStart(output, chars) } : run,
    ),
  });
  let lo = 0;
  let hi = Math.max(...gates.map((g) => g.output?.length ?? 0));
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (byteLength(JSON.stringify(withTails(mid))) <= limitBytes) lo = mid;
    else hi = mid - 1;
  }
  return withTails(lo);
}

/** The result in a termination message, or undefined when there is none; tolerant of truncation. */
export function decodeTerminationMessage(text: string): EpisodeResult | undefined {
  const start = text.indexOf('{');
  if (start < 0) return undefined;
  const body = text.slice(start).trimEnd();
  const whole = parseResult(body) ?? parseResult(body.slice(0, body.lastIndexOf('}') + 1));
  if (whole) return whole;
  return repairTruncated(body);
}

/** Cut-off JSON: close an open message string, else drop trailing fields until what is left parses. */
function repairTruncated(body: string): EpisodeResult | undefined {
  const closedMessage = parseResult(`${body}"}`);
  if (closedMessage) {
    const suffix = `${ELLIPSIS} ${TRUNCATED_NOTE}`;
    const kept = Array.from(closedMessage.message ?? '')
      .slice(0, EPISODE_MESSAGE_MAX - suffix.length)
      .join('');
    return { ...closedMessage, message: `${kept}${suffix}` };
  }
  let cut = body.length;
  for (let attempt = 0; attempt < MAX_REPAIR_ATTEMPTS; attempt++) {
    cut = body.lastIndexOf(',"', cut - 1);
    if (cut <= 0) return undefined;
    const repaired = parseResult(`${body.slice(0, cut)}}`);
    if (repaired) return { ...repaired, message: repaired.message ?? TRUNCATED_NOTE };
  }
  return undefined;
}

function parseResult(json: string): EpisodeResult | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  // An empty object or an unrelated JSON document is not a result, even though every field has a default.
  if (typeof value !== 'object' || value === null || !('exitCode' in value)) return undefined;
  const parsed = EpisodeResultSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  // Ops that do not validate (not our runner's writing) must not cost the episode its result.
  const facts = EpisodeResultSchema.safeParse({ ...value, ops: undefined, opsRejected: undefined });
  return facts.success && 'ops' in value
    ? withoutOps(facts.data, 'ops in the termination message were invalid')
    : undefined;
}

function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
