// A stack task's context stack for `episodic get` (issue 20): the STACK column (its depth) and, under the
// row of `episodic get NAME`, its top frames as status.stack keeps them (at most STACK_SHOWN_MAX, each cut).
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import type { StackStatus } from '../api/ops-status.ts';
import { stackStatus } from '../reconciler/stack.ts';
import { printable } from '../util/printable.ts';

/** The stack as it stands; before the first reconcile, spec.stack. Undefined: not a stack task. */
function stackOf(spec: AgentTaskSpec | undefined, status: AgentTaskStatus): StackStatus | undefined {
  return status.stack ?? (spec?.stack ? stackStatus(spec.stack) : undefined);
}

export function isStackTask(spec: AgentTaskSpec | undefined, status: AgentTaskStatus): boolean {
  return stackOf(spec, status) !== undefined;
}

/** The STACK column: the depth ("" for a task without a stack). */
export function stackDepth(spec: AgentTaskSpec | undefined, status: AgentTaskStatus): string {
  const stack = stackOf(spec, status);
  return stack ? String(stack.depth) : '';
}

/** "Stack: depth N (top first)" and the top frames, numbered; agent text made printable line by line. */
export function stackLines(spec: AgentTaskSpec | undefined, status: AgentTaskStatus): string[] {
  const stack = stackOf(spec, status);
  if (!stack) return [];
  if (stack.depth === 0) return ['Stack: empty'];
  const lines = [`Stack: depth ${stack.depth} (top first; the first runs next)`];
  for (const [i, frame] of stack.top.entries()) {
    const [first = '', ...rest] = frame.trimEnd().split('\n');
    const mark = `  ${i + 1}. `;
    lines.push(`${mark}${printable(first)}`);
    for (const line of rest) lines.push(`${' '.repeat(mark.length)}${printable(line)}`);
  }
  const hidden = stack.depth - stack.top.length;
  if (hidden > 0) lines.push(`  … ${hidden} more frame${hidden === 1 ? '' : 's'} (-o yaml: status.stack.frames)`);
  return lines;
}
