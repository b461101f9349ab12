// {{bb.KEY}} for an episode pod's prompt: the blackboard ConfigMap is read only when the prompt names it, or
// when the prompt is a promptFile, which only the pod reads (the values go with it: api/prompt-vars.ts).
import type { AgentTaskSpec } from '../api/agent-task.ts';
import type { Frame } from '../api/ops.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { framePrompt } from '../reconciler/stack.ts';
import { blackboardVars } from './blackboard.ts';
import { readClusterBlackboard } from './cluster-blackboard.ts';

export async function clusterPromptVars(
  client: KubeClient,
  namespace: string,
  spec: AgentTaskSpec,
  stack: readonly Frame[] | undefined,
): Promise<Record<string, string>> {
  const texts = stack ? stack.map(framePrompt) : [spec.prompt ?? ''];
  if (spec.promptFile === undefined && !texts.some((t) => t.includes('bb.'))) return {};
  return blackboardVars((await readClusterBlackboard(client, namespace)).entries);
}
