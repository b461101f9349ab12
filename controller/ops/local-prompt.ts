// The placeholders agent ops add to a local episode's prompt: the stack's and the blackboard's.
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import { stackVars } from '../reconciler/stack.ts';
import { blackboardVars } from './blackboard.ts';
import { readLocalBlackboard } from './local-blackboard.ts';

export function opsPromptVars(
  stateDir: string,
  namespace: string,
  spec: AgentTaskSpec,
  status: AgentTaskStatus,
): Record<string, string> {
  const stack = spec.stack ? stackVars(status.stack?.frames ?? spec.stack) : {};
  return { ...blackboardVars(readLocalBlackboard(stateDir, namespace).entries), ...stack };
}
