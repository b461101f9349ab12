// Counting a plan file: Markdown checkboxes with RalphSharp's markers, or a Ralph prd.json's stories.
import { closeSync, openSync, readSync } from 'node:fs';
import type { ChecklistCounts } from '../../api/leash.ts';
import { insideWorkspace } from './inside-workspace.ts';

// A plan file is a few KB; past this it is not a plan, and reading it must not cost the controller.
const MAX_BYTES = 1024 * 1024;

/** Counts of `- [ ]` pending, `[~]` in progress, `[x]` done, `[!]` failed, `[S]` skipped; or prd.json stories. */
export function countChecklist(text: string, file: string): ChecklistCounts {
  if (file.endsWith('.json')) return countStories(text);
  const c: ChecklistCounts = { done: 0, total: 0, inProgress: 0, failed: 0, skipped: 0 };
  for (const m of text.matchAll(/^\s*(?:[-*+]|\d+[.)])\s+\[([ ~xX!sS])\]/gm)) {
    c.total++;
    const mark = m[1];
    if (mark === 'x' || mark === 'X') c.done++;
    else if (mark === '~') c.inProgress++;
    else if (mark === '!') c.failed++;
    else if (mark === 's' || mark === 'S') c.skipped++;
  }
  return c;
}

function countStories(text: string): ChecklistCounts {
  const c: ChecklistCounts = { done: 0, total: 0, inProgress: 0, failed: 0, skipped: 0 };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return c;
  }
  const stories = (doc as { userStories?: unknown })?.userStories;
  if (!Array.isArray(stories)) return c;
  for (const s of stories) {
    c.total++;
    if ((s as { passes?: unknown })?.passes === true) c.done++;
  }
  return c;
}

/** The plan file's counts; undefined when it cannot be read (missing, a directory, unreadable). */
export function readChecklist(path: string): ChecklistCounts | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const buf = Buffer.alloc(MAX_BYTES);
    const n = readSync(fd, buf, 0, MAX_BYTES, 0);
    return countChecklist(buf.subarray(0, n).toString('utf8'), path);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** The counts of the plan file `path` (spec.progress.checklist) inside the workspace; undefined when unreadable. */
export function readWorkspaceChecklist(workspace: string, path: string): ChecklistCounts | undefined {
  const plan = insideWorkspace(workspace, path);
  return plan ? readChecklist(plan) : undefined;
}
