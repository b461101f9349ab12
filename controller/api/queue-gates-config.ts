// The contract between a cluster's merge queue and its gate pod (`episodic queue-gates`): the controller puts
// this JSON in EPISODIC_QUEUE_GATES_CONFIG; the pod clones `git.ref` (the queue's scratch branch), checks it is
// at `commit` (the rebased commit), runs the gates and answers with an EpisodeResult whose `gates` are the runs
// in the termination message (exit 0: every gate passed).
import { z } from 'zod';
import { GitWorkspaceSchema } from './agent-task.ts';
import { GateConfigSchema, POD_WORKSPACE } from './episode-config.ts';

export const QUEUE_GATES_CONFIG_ENV = 'EPISODIC_QUEUE_GATES_CONFIG';

export const QueueGatesConfigSchema = z.object({
  task: z.string(),
  namespace: z.string(),
  /** The queue's name as in the spec. */
  queue: z.string(),
  /** The rebased commit the gates judge; the scratch branch must point at it. */
  commit: z.string().regex(/^[0-9a-f]{40,64}$/),
  git: GitWorkspaceSchema.shape.git,
  gates: z.array(GateConfigSchema).min(1),
  workspaceDir: z.string().default(POD_WORKSPACE),
});

export type QueueGatesConfig = z.infer<typeof QueueGatesConfigSchema>;
