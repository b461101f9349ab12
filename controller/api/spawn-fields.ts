// spawn/send in the AgentTask contract (issue 20): the spec fields and the status fields they add. One
// block, so other features' fields merge around it.
import { z } from 'zod';

/** limits.maxChildren's default: how many tasks one task may spawn in its life. */
export const MAX_CHILDREN_DEFAULT = 10;
/** A root task has depth 0; its children 1; nothing spawns below depth 3. */
export const SPAWN_DEPTH_MAX = 3;
/** Label of a spawned task: its depth (a root task has none). */
export const DEPTH_LABEL = 'episodic.dev/depth';
/** Who may own created tasks, and the label that names the owner on each created task. */
export const OWNER_LABELS = {
  AgentTask: 'episodic.dev/parent',
  AgentTrigger: 'episodic.dev/trigger',
} as const;
export type OwnerKind = keyof typeof OWNER_LABELS;

/** A mailbox message (`send`): what a sender writes and the next episode's prompt reads. */
export interface Message {
  id: string;
  /** The sending task's name, or "person" for `episodic send`. */
  from: string;
  /** RFC 3339: messages are read oldest first. */
  at: string;
  text: string;
}

export const SPAWN_LIMIT_FIELDS = {
  maxChildren: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe(`tasks this task may spawn (default ${MAX_CHILDREN_DEFAULT}); a child never gets more than its parent`),
};

export const SPAWN_SPEC_FIELDS = {
  awaitChildren: z
    .boolean()
    .default(true)
    .describe('after an episode that spawned, wait (Waiting, WaitingForChildren) until every child is terminal'),
  interrupt: z
    .boolean()
    .default(false)
    .describe('a message arriving during an episode stops it (cancelled, not a failure); the next one gets it'),
};

export const MailboxStatusSchema = z.object({
  episode: z.number().int().min(1).describe('the episode the messages were delivered to'),
  delivered: z.array(z.string()).max(64).describe('ids of the messages in its prompt, removed once it has ended'),
});
export type MailboxStatus = z.infer<typeof MailboxStatusSchema>;

export const SPAWN_STATUS_FIELDS = {
  mailbox: MailboxStatusSchema.optional().describe("messages delivered to an episode, until they're acknowledged"),
};
