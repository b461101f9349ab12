// Agent ops in the AgentTask contract (issue 20): the spec's context stack, and the status fields the
// reconciler keeps for ops (the stack as it stands, an ended episode's ops not yet applied). Kept in one
// block so other features' fields merge around it.
import { z } from 'zod';
import { FRAME_PROMPT_MAX, FRAMES_PER_PUSH_MAX, OP_WORDS_MAX, STACK_DEPTH_MAX } from './bounds.ts';
import { FrameSchema, OpSchema } from './ops.ts';

// The CRD types spec.stack's frames as strings: its CEL prompt rule cannot see a list of untyped (union) items.
const SpecFrameSchema = FrameSchema.meta({
  'x-episodic-crd-as': { type: 'string', minLength: 1, maxLength: FRAME_PROMPT_MAX, description: 'a prompt' },
});

export const OPS_SPEC_FIELDS = {
  stack: z
    .array(SpecFrameSchema)
    .min(1)
    .max(FRAMES_PER_PUSH_MAX)
    .optional()
    .describe('a context stack instead of prompt, top first: each episode works on the top frame'),
  restartStack: z
    .boolean()
    .default(false)
    .describe('an emptied stack starts over with spec.stack instead of ending the task (StackEmpty)'),
  wake: z
    .enum(['grind', 'onMessage'])
    .default('grind')
    .describe('grind: the next episode starts at once; onMessage: it waits for a message'),
};

export const StackStatusSchema = z.object({
  depth: z.number().int().nonnegative(),
  top: z.array(z.string()).describe('the top frames (the first runs next), each cut short'),
  frames: z.array(FrameSchema).max(STACK_DEPTH_MAX).describe('the whole stack, top first'),
});
export type StackStatus = z.infer<typeof StackStatusSchema>;

export const PendingOpsSchema = z.object({
  episode: z.number().int().min(1).describe('the episode whose ops these are'),
  ops: z.array(OpSchema).describe('blackboard, spawn and send ops still to apply'),
});
export type PendingOps = z.infer<typeof PendingOpsSchema>;

export const OPS_STATUS_FIELDS = {
  stack: StackStatusSchema.optional().describe('spec.stack: the context stack as it stands'),
  pendingOps: PendingOpsSchema.optional().describe("an ended episode's ops, until they are applied"),
};

export const OPS_LAST_EPISODE_FIELDS = {
  ops: z.array(z.string().max(OP_WORDS_MAX)).max(32).optional().describe('the ops the episode gave, e.g. "set plan"'),
  opsRejected: z.string().max(1000).optional().describe('the ops refused, and why'),
};
