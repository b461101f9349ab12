// The three tasks of the spawn/send kill -9 tests (local and cluster): boss's first frame spawns a and b and
// sends to peer and to sink, its second collects {{children}} and says bye to peer; peer (wake: onMessage)
// reads its messages in three more frames; sink never reads its mailbox.
const op = (v: unknown) => `@op ${JSON.stringify(v)}`;

const plan = [
  'plan',
  op({ op: 'spawn', name: 'a', stack: ['work a'] }),
  op({ op: 'spawn', name: 'b', stack: ['work b'] }),
  op({ op: 'send', to: 'peer', message: 'hello peer' }),
  op({ op: 'send', to: 'sink', message: 'hello sink' }),
].join('\n');
const collect = ['collect:\n{{children}}', op({ op: 'send', to: 'peer', message: 'bye peer' })].join('\n');

/** Spec fields of each task, without its agent. */
export const KILL_TASKS: Record<'boss' | 'peer' | 'sink', Record<string, unknown>> = {
  boss: { stack: [plan, collect] },
  peer: {
    wake: 'onMessage',
    stack: ['start', 'inbox:\n{{messages}}', 'inbox 2:\n{{messages}}', 'inbox 3:\n{{messages}}'],
  },
  sink: { stack: ['reads no messages'] },
};
