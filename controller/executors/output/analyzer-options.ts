// What the output analyzer takes from a task's spec: written once for the local executor, its crash
// recovery and the episode pod's runner (whose config carries the same fields).
import type { AgentTaskSpec } from '../../api/agent-task.ts';
import type { AnalyzerOptions } from './types.ts';

type AnalyzerAgent = Partial<Pick<AgentTaskSpec['agent'], 'output' | 'pricing'>>;
type AnalyzerCompletion = Pick<AgentTaskSpec['completion'], 'promise' | 'resetTimeZone' | 'signals'>;

/** spec.agent (absent: a task whose spec is gone, read as auto) and spec.completion as analyzer options. */
export function analyzerOptions(agent: AnalyzerAgent | undefined, completion: AnalyzerCompletion): AnalyzerOptions {
  return {
    format: agent?.output ?? 'auto',
    promise: completion.promise,
    pricing: agent?.pricing,
    // Without resetTimeZone the process's zone applies: the agent's own, since it inherits ours.
    timeZone: completion.resetTimeZone,
    signals: completion.signals !== undefined,
  };
}
