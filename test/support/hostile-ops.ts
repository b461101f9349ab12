// The hostile agent of issue 20 §4, for the local and the cluster end-to-end tests alike: one stack frame of
// ops-agent lines that tries every way out of its bounds, and copies secrets from its env into its ops
// (the frame names them as ${NAME}, so they are in no prompt or status the user wrote). Each escape is paired
// with the words the controller's rejection has to say.

/** Given to the agent as API_TOKEN (a valid DNS label too, so it can be a send target's name). */
export const ENV_SECRET = 'hunter2-correct-horse-battery';
/** Looks like a credential: redacted by its look (the agent makes it from an env prefix too short to hide). */
export const TOKEN = 'sk-live-0123456789abcdefghijklmnop';
const SECRET = '${API_TOKEN}';
const MADE_TOKEN = '${TOKEN_PREFIX}live-0123456789abcdefghijklmnop';

const op = (v: unknown) => `@op ${JSON.stringify(v)}`;
const raw = (v: unknown) => `@raw ${JSON.stringify(v)}`;

/** A chain of spawns: each child spawns `d` again; the fourth level (depth 4) is refused. */
function chain(level: number): string {
  if (level > 4) return 'bottom';
  return `level ${level}\n${op({ op: 'spawn', name: 'd', stack: [chain(level + 1)] })}`;
}

/** The parent's spec over `base` (its agent): maxEpisodes 5 and maxChildren 3 to break, the secret in env. */
export function hostileSpec(agent: Record<string, unknown>): Record<string, unknown> {
  const frame = [
    'attack',
    // First: a pod's termination message carries the first two rejections word for word, and counts the rest.
    raw({ op: MADE_TOKEN }),
    raw({ op: 'del', key: 'ok', [SECRET]: 1 }),
    raw({ op: 'spawn', name: 'kube-system/x', prompt: 'p' }),
    raw({ op: 'spawn', name: '../x', prompt: 'p' }),
    raw({ op: 'spawn', name: 'UPPER', prompt: 'p' }),
    raw({ op: 'spawn', name: 'x', prompt: 'p', namespace: 'kube-system' }),
    raw({ op: 'send', to: 'kube-system/peer', message: 'm' }),
    op({ op: 'spawn', name: 'rich', prompt: 'p', limits: { maxEpisodes: 1000 } }),
    op({ op: 'spawn', name: 'out', prompt: 'p', workspace: `../${SECRET}` }),
    op({ op: 'set', key: SECRET, value: MADE_TOKEN }),
    op({ op: 'set', key: 'ok', value: SECRET }),
    op({ op: 'send', to: SECRET, message: MADE_TOKEN }),
    raw({ op: 'set', key: MADE_TOKEN, value: 'v' }),
    op({ op: 'spawn', name: 'd', stack: [chain(2)] }),
    ...Array.from({ length: 6 }, (_, i) => op({ op: 'spawn', name: `s${i}`, stack: [`storm ${i}`] })),
  ].join('\n');
  return {
    prompt: undefined,
    stack: [frame],
    limits: { maxEpisodes: 5, maxChildren: 3, episodeTimeoutSeconds: 600 },
    agent: {
      ...agent,
      env: [
        { name: 'API_TOKEN', value: ENV_SECRET },
        { name: 'TOKEN_PREFIX', value: 'sk-' },
      ],
    },
  };
}

/** The tasks that exist afterwards: the parent, the chain to depth 3, and two of the storm (maxChildren 3). */
export const HOSTILE_TASKS = ['evil', 'evil-d', 'evil-d-d', 'evil-d-d-d', 'evil-s0', 'evil-s1'];

/** What the parent's rejections of lines say (its record; on a cluster the first two, and a count). */
export const PARSE_REJECTIONS = [
  /line 1: unknown op \(known/,
  /line 2: del: unknown field/,
  /spawn: name: must be a lowercase DNS label/,
  /spawn: unknown field \\?"namespace/,
  /send: to: must be a lowercase DNS label/,
];

/** What its OpsRejected Event says of the ops refused while applying. */
export const APPLY_REJECTIONS = [
  /limits.maxEpisodes 1000 is above the parent's 5/,
  // Locally the parent has a directory workspace; on a cluster none that a sub-directory could be of.
  /spawn out: (the workspace asked for leads out of the parent's|a sub-workspace needs a directory) workspace/,
  /send to \[redacted\]: no such task/,
  /maxChildren 3 reached/,
];

/** A child's rejection at the bottom of the chain. */
export const DEPTH_REJECTION = /spawn d: depth 4 is past 3/;
