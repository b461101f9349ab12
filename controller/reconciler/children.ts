// A parent's side of spawn: waiting for its children (Waiting, WaitingForChildren), {{children}} in its next
// prompt, and the spend of its subtree (treeCost), which family caps count (family-cap.ts). Pure: the loop
// gathers the children's facts.
import { clip, roundUSD } from '../api/bounds.ts';
import { TERMINAL_PHASES } from '../api/agent-task.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';

/** What a parent sees of one child. */
export interface ChildView {
  name: string;
  /** Undefined: created, not reconciled yet. */
  phase?: AgentTaskStatus['phase'];
  /** The child's spend and that of every task below it (treeCost of the child). */
  costUSD: number;
  /** Named results the child reported, if any. */
  outputs?: Readonly<Record<string, string>>;
  lastMessage?: string;
  /** What best-of-N compares attempts by (attempts-select.ts). */
  evidence?: {
    changedLines?: number;
    outOfScope?: boolean;
    gatesPassed?: boolean;
    finishedAt?: string;
    /** Episodes that changed the workspace: a winning attempt's become its task's (a trigger's PR needs some). */
    workspaceChanges?: number;
  };
}

/** Characters of each child's last message and of each output value in {{children}}. */
export const CHILD_MESSAGE_SHOWN_MAX = 500;
export const CHILD_OUTPUT_SHOWN_MAX = 300;
/** Characters of {{children}} in all; children past it are counted, not shown. */
export const CHILDREN_TEXT_MAX = 8 * 1024;

const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_PHASES);

export function isTerminal(child: ChildView): boolean {
  return child.phase !== undefined && TERMINAL.has(child.phase);
}

/** The parent waits while awaitChildren holds and some child is not terminal; else undefined. */
export function waitForChildren(
  spec: { awaitChildren?: boolean },
  children: readonly ChildView[],
): { phase: 'Waiting'; reason: 'WaitingForChildren'; message: string } | undefined {
  if (spec.awaitChildren === false) return undefined;
  const open = children.filter((c) => !isTerminal(c));
  if (open.length === 0) return undefined;
  const names = clip(open.map((c) => c.name).join(', '), 200);
  return {
    phase: 'Waiting',
    reason: 'WaitingForChildren',
    message: `waiting for ${open.length} of ${children.length} children: ${names}`,
  };
}

/** {{children}}: one block per child, in name order: phase, outputs and last message, bounded. */
export function renderChildren(children: readonly ChildView[]): string {
  const blocks: string[] = [];
  let used = 0;
  const sorted = [...children].sort((a, b) => a.name.localeCompare(b.name));
  for (const [i, c] of sorted.entries()) {
    const block = childBlock(c);
    if (used + block.length > CHILDREN_TEXT_MAX) {
      blocks.push(`(${sorted.length - i} more children not shown)`);
      break;
    }
    blocks.push(block);
    used += block.length;
  }
  return blocks.join('\n');
}

function childBlock(c: ChildView): string {
  const lines = [`- ${c.name}: ${c.phase ?? 'Pending'}`];
  for (const [k, v] of Object.entries(c.outputs ?? {})) lines.push(`  output ${k}: ${clip(v, CHILD_OUTPUT_SHOWN_MAX)}`);
  if (c.lastMessage) lines.push(`  last message: ${clip(c.lastMessage, CHILD_MESSAGE_SHOWN_MAX)}`);
  return lines.join('\n');
}

/**
 * What `root` and every task below it spent, each task once (even if parent labels loop).
 * status.costUSD is a task's own spend, never a family's: the sums live only here, so nothing counts twice.
 */
export function treeCost(
  root: string,
  ownUSD: (key: string) => number,
  childrenOf: (key: string) => Iterable<string>,
): number {
  const seen = new Set<string>([root]);
  const todo = [root];
  let sum = 0;
  for (let key = todo.pop(); key !== undefined; key = todo.pop()) {
    sum += ownUSD(key);
    for (const child of childrenOf(key)) {
      if (seen.has(child)) continue;
      seen.add(child);
      todo.push(child);
    }
  }
  return roundUSD(sum);
}
