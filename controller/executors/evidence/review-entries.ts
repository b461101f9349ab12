// What counts as an entry of DISCOVERY.md / IDEAS.md and as a `[!]` item of a plan file. Pure text rules.
//
// An entry starts at a heading, at a top-level list item (`-`, `*`, `+`, `1.`, indented at most one space) or
// at the first line of a paragraph; the lines right after it that start nothing (wrapped text, an indented
// sub-item) belong to it, and a blank line ends it. A heading with no text of its own under it only titles
// what follows ("# Discoveries", "## 2026-11-25") and is no entry. Two entries are the same when their
// text is (markers dropped, whitespace collapsed): that is what the digest covers.
import { createHash } from 'node:crypto';
import { oneLine } from '../../api/bounds.ts';

const HEADING = /^ {0,3}(#{1,6})\s+(.*)$/;
const TOP_ITEM = /^ ?(?:[-*+]|\d+[.)])\s+(.*)$/;
const FLAGGED = /^\s*(?:[-*+]|\d+[.)])\s+\[!\]\s*(.*)$/;
const FENCE = /^ {0,3}(```|~~~)/;

interface Block {
  heading: boolean;
  lines: string[];
}

/** The entries of a Markdown log, in file order, as normalised text. */
export function reviewEntries(markdown: string): string[] {
  const blocks: Block[] = [];
  let current: Block | undefined;
  let inFence = false;
  for (const line of markdown.split(/\r?\n/)) {
    if (FENCE.test(line)) inFence = !inFence;
    const blank = line.trim() === '';
    if (blank && !inFence) {
      current = undefined;
      continue;
    }
    const heading = inFence ? null : HEADING.exec(line);
    const item = inFence || heading ? null : TOP_ITEM.exec(line);
    if (heading || item || !current) {
      current = { heading: heading !== null, lines: [heading ? heading[2] : item ? item[1] : line] };
      blocks.push(current);
    } else current.lines.push(line);
  }
  return blocks.filter((b) => !(b.heading && b.lines.length === 1)).map((b) => normalise(b.lines.join(' ')));
}

/** The text of every `[!]` item of a Markdown plan, in file order ("(no text)" for a bare marker). */
export function flaggedItems(plan: string): string[] {
  const items: string[] = [];
  for (const line of plan.split(/\r?\n/)) {
    const m = FLAGGED.exec(line);
    if (m) items.push(normalise(m[1]) || '(no text)');
  }
  return items;
}

/** 12 hex characters of SHA-256: "the same entry" across episodes and files of a few hundred entries. */
export function entryDigest(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

function normalise(text: string): string {
  return oneLine(text);
}
