// What needs a person, as one episode saw it: the plan file's `[!]` items after the episode, and the entries of
// DISCOVERY.md and IDEAS.md it added or removed (a snapshot before the agent, compared after). The same code
// runs in the local executor and in the runner inside an episode pod, which alone sees a cluster workspace.
// The result is bounded in bytes: it travels in the pod's termination message beside everything else.
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import {
  REVIEW_EVIDENCE_BYTES,
  REVIEW_EVIDENCE_TEXT_MAX,
  REVIEW_FLAGGED_MAX,
  REVIEW_ENTRIES_MAX,
  REVIEW_REMOVED_MAX,
  clip,
} from '../../api/bounds.ts';
import { DEFAULT_PLAN_FILE, REVIEW_FILES } from '../../api/review.ts';
import type { ReviewEntry, ReviewEvidence } from '../../api/review.ts';
import { printable } from '../../util/printable.ts';
import { insideWorkspace } from './inside-workspace.ts';
import { entryDigest, flaggedItems, reviewEntries } from './review-entries.ts';

// These files are a few KB; past this the rest is not read (reading must not cost the controller).
const MAX_BYTES = 1024 * 1024;

/** The entries of DISCOVERY.md and IDEAS.md by digest. */
export type ReviewSnapshot = Map<string, ReviewEntry>;

export function snapshotReview(workspace: string): ReviewSnapshot {
  const entries: ReviewSnapshot = new Map();
  for (const file of REVIEW_FILES) {
    const text = readInside(workspace, file);
    for (const entry of text === undefined ? [] : reviewEntries(text)) {
      const digest = entryDigest(`${file}\n${entry}`);
      entries.set(digest, {
        file,
        text: clip(printable(entry, REVIEW_EVIDENCE_TEXT_MAX), REVIEW_EVIDENCE_TEXT_MAX),
        digest,
      });
    }
  }
  return entries;
}

/** The facts after the episode: `[!]` items now, entries added and removed since `before`. */
export function collectReview(workspace: string, before: ReviewSnapshot, planFile?: string): ReviewEvidence {
  const plan = planFile ?? DEFAULT_PLAN_FILE;
  const planText = plan.endsWith('.json') ? undefined : readInside(workspace, plan);
  const flagged = planText === undefined ? [] : flaggedItems(planText);
  const after = snapshotReview(workspace);
  const added = [...after.values()].filter((e) => !before.has(e.digest));
  const removed = [...before.keys()].filter((d) => !after.has(d));
  return fitReview(
    flagged.map((t) => clip(printable(t, REVIEW_EVIDENCE_TEXT_MAX), REVIEW_EVIDENCE_TEXT_MAX)),
    added,
    removed.slice(0, REVIEW_REMOVED_MAX),
  );
}

interface FullReview {
  flagged: string[];
  added: ReviewEntry[];
  removed: string[];
  flaggedMore: number;
  addedMore: number;
}

/** As many items as fit in REVIEW_EVIDENCE_BYTES of JSON, flagged ones first; the rest counted. */
export function fitReview(flagged: string[], added: ReviewEntry[], removed: string[]): ReviewEvidence {
  const fits: FullReview = { flagged: [], added: [], removed, flaggedMore: 0, addedMore: 0 };
  for (const text of flagged) {
    if (fits.flagged.length < REVIEW_FLAGGED_MAX && fitsBudget({ ...fits, flagged: [...fits.flagged, text] }))
      fits.flagged.push(text);
    else fits.flaggedMore++;
  }
  for (const entry of added) {
    if (fits.added.length < REVIEW_ENTRIES_MAX && fitsBudget({ ...fits, added: [...fits.added, entry] }))
      fits.added.push(entry);
    else fits.addedMore++;
  }
  return compact(fits);
}

/** Empty lists and zero counts left out. */
function compact(review: FullReview): ReviewEvidence {
  return Object.fromEntries(
    Object.entries(review).filter(([, v]) => (Array.isArray(v) ? v.length > 0 : v !== 0)),
  ) as ReviewEvidence;
}

function fitsBudget(review: FullReview): boolean {
  // The counts may still grow: room for both with six digits.
  return Buffer.byteLength(JSON.stringify(compact(review)), 'utf8') + 40 <= REVIEW_EVIDENCE_BYTES;
}

/** A file inside the workspace, at most MAX_BYTES of it; undefined when missing, outside or unreadable. */
function readInside(workspace: string, file: string): string | undefined {
  const path = insideWorkspace(workspace, file);
  // Only a regular file: opening a FIFO an agent left there would block the controller.
  if (!path || !isRegularFile(path)) return undefined;
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const buf = Buffer.alloc(Math.min(fstatSync(fd).size, MAX_BYTES));
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf.subarray(0, n).toString('utf8');
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function isRegularFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
