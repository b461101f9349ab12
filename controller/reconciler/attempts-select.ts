// Best-of-N's choice (issue 32 §2), pure: the documented evidence order, and a judge's verdict checked
// against the candidates (anything but the number of one of them falls back to evidence, and says why).
import { clip } from '../api/bounds.ts';
import type { AttemptStatus } from '../api/attempts.ts';

/**
 * Better first: succeeded > gates passed > inside scope > fewer changed lines > lower cost > earlier finish,
 * then the lower attempt number, so the order is total and the same every pass.
 */
export function compareAttempts(a: AttemptStatus, b: AttemptStatus): number {
  const yes = (v: boolean | undefined) => (v ? 0 : 1);
  return (
    yes(a.phase === 'Succeeded') - yes(b.phase === 'Succeeded') ||
    yes(a.gatesPassed) - yes(b.gatesPassed) ||
    yes(a.insideScope) - yes(b.insideScope) ||
    (a.changedLines ?? Number.MAX_SAFE_INTEGER) - (b.changedLines ?? Number.MAX_SAFE_INTEGER) ||
    a.costUSD - b.costUSD ||
    finish(a) - finish(b) ||
    a.number - b.number
  );
}

function finish(a: AttemptStatus): number {
  const t = Date.parse(a.finishedAt ?? '');
  return Number.isFinite(t) ? t : Number.MAX_SAFE_INTEGER;
}

/** The best attempt by evidence. */
export function bestByEvidence(candidates: readonly AttemptStatus[]): AttemptStatus | undefined {
  return [...candidates].sort(compareAttempts)[0];
}

/** The judge's `winner` output as an attempt number of a candidate, or why it cannot be used. */
export function judgeVerdict(
  winner: string | undefined,
  candidates: readonly AttemptStatus[],
): { ok: true; number: number } | { ok: false; why: string } {
  if (winner === undefined) return { ok: false, why: 'the judge wrote no output winner' };
  const text = winner.trim();
  const n = /^[1-9][0-9]?$/.test(text) ? Number(text) : Number.NaN;
  const found = candidates.find((c) => c.number === n);
  if (!found) return { ok: false, why: `the judge's winner ${JSON.stringify(clip(text, 40))} is no attempt's number` };
  return { ok: true, number: n };
}
