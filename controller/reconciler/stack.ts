// The context stack (spec.stack, issue 20): how it shows in status, and the prompt of its top frame.
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import { clip, STACK_FRAME_SHOWN_MAX, STACK_SHOWN_MAX } from '../api/bounds.ts';
import type { Frame } from '../api/ops.ts';
import type { StackStatus } from '../api/ops-status.ts';

export function stackStatus(frames: readonly Frame[]): StackStatus {
  return {
    depth: frames.length,
    top: frames.slice(0, STACK_SHOWN_MAX).map((f) => clip(framePrompt(f), STACK_FRAME_SHOWN_MAX)),
    frames: [...frames],
  };
}

export function framePrompt(frame: Frame): string {
  return typeof frame === 'string' ? frame : frame.prompt;
}

/** A stack task's status starts with spec.stack (again after a re-open, which clears it). */
export function syncStack(status: AgentTaskStatus, spec: AgentTaskSpec | undefined): AgentTaskStatus {
  if (!spec) return status;
  if (!spec.stack) return status.stack ? { ...status, stack: undefined } : status;
  if (status.stack) return status;
  return { ...status, stack: stackStatus(spec.stack) };
}

/**
 * The prompt template of a stack task's episode: the frames below the top as context (nearest first), then
 * the top frame as the task. {{frame}}, {{stack.depth}} and the top frame's {{vars.NAME}} are filled later.
 */
export function stackPromptTemplate(frames: readonly Frame[]): string {
  const below = frames.slice(1).map((f, i) => `${i + 1}. ${framePrompt(f)}`);
  const context =
    below.length > 0 ? `## Context (the frames below this task, nearest first)\n\n${below.join('\n')}\n\n` : '';
  return `${context}## Task\n\n${frames[0] ? framePrompt(frames[0]) : ''}\n`;
}

/** The placeholders a stack episode adds: {{frame}}, {{stack.depth}}, {{vars.NAME}} of the top frame. */
export function stackVars(frames: readonly Frame[]): Record<string, string> {
  const top = frames[0];
  const vars = top && typeof top !== 'string' ? (top.vars ?? {}) : {};
  const out: Record<string, string> = { frame: top ? framePrompt(top) : '', 'stack.depth': String(frames.length) };
  for (const [k, v] of Object.entries(vars)) out[`vars.${k}`] = v;
  return out;
}
