// A generated corpus of bad AgentTask files (issue 12): for every field of a full, valid spec a wrong type and
// an unknown sibling, every object replaced by a scalar, names no pod label can carry, huge and binary files,
// crafted YAML, documents of the wrong shape, and the cross-file mistakes (escapes, cycles, duplicates).
// Each case says what a user must see: the field named in the error, and whether the apiserver's CRD
// refuses it too (crd: false where only the local run can know, e.g. a workspace leading out of DIR).
// What validate once accepted and run then refused (issue 18.7) is here too: a promptFile missing or leading
// out, workspaces through dangling links, files or volume claims, spec files linked from outside, cycles
// through an invalid spec in another file, documents without a kind; and what validate only warns about
// (an agent command not found here, argv written as one string, a workspace beside a similar one).
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { API_VERSION, KIND } from '../../controller/api/agent-task.ts';

export interface BadSpecCase {
  /** File name (unique). */
  file: string;
  /** File contents. */
  text: string | Buffer;
  /** A substring the error for this file must contain (the field path), when the case has one. */
  field?: string;
  /** The object, when the apiserver can be asked about it (strict field validation, dry run). */
  object?: Record<string, unknown>;
  /** The CRD refuses it as well. */
  crd: boolean;
  /** Makes what the case needs beside its file in the spec directory (directories, symlinks). */
  setup?: (dir: string, outside: string) => void;
  /** validate only warns (exit 0 for this file alone); run's failure still names file and field. */
  warning?: boolean;
  /** A spec file that is a symlink: `text` is written at `outside/file` and linked from the spec directory. */
  linkedFromOutside?: boolean;
}

type Node = Record<string, unknown>;

/** Every field set, valid for both modes (the image is only used on a cluster). */
export function fullSpec(): Node {
  return {
    prompt: 'Do the next step of the plan. Say <promise>DONE</promise> when done.',
    agent: {
      command: ['agent', '-p'],
      promptVia: 'stdin',
      output: 'claude',
      image: 'example/agent:1',
      env: [{ name: 'MODE', value: 'x' }],
      pricing: { inputPerMTok: 1.25, outputPerMTok: 10, cacheReadPerMTok: 0.125 },
    },
    completion: { promise: 'DONE', onExitZero: false, minEpisodes: 1, requires: ['changes'], contextTooLong: 'fatal' },
    limits: { maxEpisodes: 3, maxCostUSD: 2, maxTokens: 100000, episodeTimeoutSeconds: 60, maxConsecutiveFailures: 2 },
    backoff: { initialSeconds: 1, factor: 2, maxSeconds: 10 },
    dependsOn: [],
    suspend: false,
    progress: { checklist: 'PLAN.md' },
    breaker: { noProgressEpisodes: 5, halfOpenEpisodes: 3, sameErrorEpisodes: 5 },
    history: { keep: 10 },
    resume: { policy: 'Manual', maxAutoResumes: 1, cooldownSeconds: 5, grantEpisodes: 1 },
  };
}

export function taskObject(name: string, spec: unknown, metadata: Node = {}): Node {
  return { apiVersion: API_VERSION, kind: KIND, metadata: { name, ...metadata }, spec };
}

function leaves(node: Node, path: string[] = []): Array<{ path: string[]; value: unknown }> {
  return Object.entries(node).flatMap(([key, value]) =>
    value && typeof value === 'object' && !Array.isArray(value)
      ? [{ path: [...path, key], value }, ...leaves(value as Node, [...path, key])]
      : [{ path: [...path, key], value }],
  );
}

function withAt(spec: Node, path: string[], change: (parent: Node, key: string) => void): Node {
  const copy = structuredClone(spec);
  let parent = copy;
  for (const key of path.slice(0, -1)) parent = parent[key] as Node;
  change(parent, path[path.length - 1]);
  return copy;
}

/** A value of another JSON type than the one the field has. */
function wrongTypes(value: unknown): unknown[] {
  if (typeof value === 'string') return [12345, ['a']];
  if (typeof value === 'number') return ['12', true];
  if (typeof value === 'boolean') return ['yes', 1];
  if (Array.isArray(value)) return ['not-a-list', { a: 1 }];
  return ['not-an-object', 7];
}

export function badSpecCorpus(): BadSpecCase[] {
  const cases: BadSpecCase[] = [];
  const object = (file: string, obj: Node, field: string | undefined, crd = true) =>
    cases.push({ file, text: JSON.stringify(obj, null, 2), field, object: obj, crd });
  let n = 0;
  const name = () => `bad-${++n}`;

  for (const { path, value } of leaves(fullSpec())) {
    const field = `spec.${path.join('.')}`;
    for (const wrong of wrongTypes(value)) {
      const id = name();
      object(
        `${id}.yaml`,
        taskObject(
          id,
          withAt(fullSpec(), path, (p, k) => (p[k] = wrong)),
        ),
        field,
      );
    }
    // null: locally an error like any wrong type; the apiserver reads it as "unset" (crd: false).
    const nul = name();
    object(
      `${nul}.yaml`,
      taskObject(
        nul,
        withAt(fullSpec(), path, (p, k) => (p[k] = null)),
      ),
      field,
      false,
    );
    // A typo of the field beside it: never ignored (maxEpisode would have meant no cap).
    const id = name();
    const typo = `${path[path.length - 1]}x`;
    object(
      `${id}.yaml`,
      taskObject(
        id,
        withAt(fullSpec(), path, (p) => (p[typo] = value)),
      ),
      `spec.${[...path.slice(0, -1), typo].join('.')}`,
    );
  }
  for (const bad of ['Upper', 'dotted.name', 'a'.repeat(64), '-lead', 'trail-', 'under_score', 'esc\u001b[31m', '']) {
    const id = name();
    object(`${id}.yaml`, taskObject(bad, fullSpec()), 'metadata.name');
  }
  object(`${name()}.yaml`, { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'no-spec' } }, 'spec', false);
  object(`${name()}.yaml`, taskObject('both-prompts', { ...fullSpec(), promptFile: 'PROMPT.md' }), 'prompt', false);
  object(
    `${name()}.yaml`,
    taskObject(
      'negative',
      withAt(fullSpec(), ['limits', 'maxEpisodes'], (p, k) => (p[k] = -1)),
    ),
    'spec.limits.maxEpisodes',
  );

  // Only the local run knows the spec directory and the other files.
  object(
    `${name()}.yaml`,
    taskObject('escapes', { ...fullSpec(), workspace: '../../outside' }),
    'spec.workspace',
    false,
  );
  object(
    `${name()}.yaml`,
    taskObject('long-escape', { ...fullSpec(), workspace: `../${'x'.repeat(1500)}` }),
    'spec.workspace',
    false,
  );
  object(`${name()}.yaml`, taskObject('self-dep', { ...fullSpec(), dependsOn: ['self-dep'] }), 'spec.dependsOn', false);
  object(`${name()}.yaml`, taskObject('cycle-a', { ...fullSpec(), dependsOn: ['cycle-b'] }), 'spec.dependsOn', false);
  object(`${name()}.yaml`, taskObject('cycle-b', { ...fullSpec(), dependsOn: ['cycle-a'] }), 'spec.dependsOn', false);
  // A second good-1, in a file that sorts after the first: the first definition wins, this one is an error.
  object('zz-duplicate.yaml', taskObject('good-1', fullSpec()), 'already defined', false);

  cases.push(...acceptedThenRefused(name));

  // Files no document can be read from.
  const raw = (text: string | Buffer) => cases.push({ file: `${name()}.yaml`, text, crd: false });
  raw(Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x1b, 0x5b, 0x32, 0x4a, ...Buffer.alloc(10_000, 0x07)]));
  raw('spec: &a [*a]\n');
  raw(
    `a: &a ["x","x","x","x","x","x","x","x","x","x"]\n${Array.from(
      { length: 9 },
      (_, i) =>
        `${'b'.repeat(i + 1)}: &${'b'.repeat(i + 1)} [${Array(10)
          .fill(i === 0 ? '*a' : `*${'b'.repeat(i)}`)
          .join(',')}]`,
    ).join('\n')}\n`,
  );
  raw('- just\n- a\n- list\n');
  raw('just a scalar\n');
  raw('apiVersion: episodic.dev/v1alpha1\nkind: AgentTask\nmetadata: {name: [unclosed\n');
  raw(
    `apiVersion: episodic.dev/v1alpha1\nkind: AgentTask\nmetadata: {name: big}\nspec:\n  prompt: "${'x'.repeat(1_100_000)}"\n`,
  );
  raw('\t\u0000\u0001 key: value\n');
  return cases;
}

/** What validate accepted and run refused, one kind of case after another; then what validate warns about. */
function acceptedThenRefused(name: () => string): BadSpecCase[] {
  const cases: BadSpecCase[] = [];
  const task = (id: string, spec: Node, field: string, extra: Partial<BadSpecCase> = {}) => {
    const obj = taskObject(id, { ...fullSpec(), ...spec });
    cases.push({
      file: `${name()}.yaml`,
      text: JSON.stringify(obj, null, 2),
      field,
      object: obj,
      crd: false,
      ...extra,
    });
  };
  // prompt: undefined leaves the key out of the JSON.
  const noPrompt = (promptFile: string): Node => ({ prompt: undefined, promptFile });
  // promptFile
  task('pf-missing', { ...noPrompt('PROMPT.md'), workspace: 'ws/pf-missing' }, 'spec.promptFile');
  task('pf-missing-default-ws', noPrompt('PROMPT.md'), 'spec.promptFile');
  task('pf-absolute', noPrompt('/etc/hostname'), 'spec.promptFile');
  task('pf-dir', { ...noPrompt('prompts'), workspace: 'ws/pf-dir' }, 'spec.promptFile', {
    setup: (dir) => mkdirSync(join(dir, 'ws', 'pf-dir', 'prompts'), { recursive: true }),
  });
  task('pf-link-out', { ...noPrompt('PROMPT.md'), workspace: 'ws/pf-link-out' }, 'spec.promptFile', {
    setup: (dir, outside) => {
      mkdirSync(join(dir, 'ws', 'pf-link-out'), { recursive: true });
      writeFileSync(join(outside, 'secret.md'), 'not yours');
      symlinkSync(join(outside, 'secret.md'), join(dir, 'ws', 'pf-link-out', 'PROMPT.md'));
    },
  });
  // workspace
  task('ws-volume', { workspace: { volumeClaim: 'data' } }, 'spec.workspace');
  task('ws-dangling', { workspace: 'dangling-link/ws' }, 'spec.workspace', {
    setup: (dir, outside) => symlinkSync(join(outside, 'not-there'), join(dir, 'dangling-link')),
  });
  task('ws-link-out', { workspace: 'ws/linked-out' }, 'spec.workspace', {
    setup: (dir, outside) => {
      mkdirSync(join(dir, 'ws'), { recursive: true });
      symlinkSync(outside, join(dir, 'ws', 'linked-out'));
    },
  });
  task('ws-file', { workspace: 'a-file/ws' }, 'spec.workspace', {
    setup: (dir) => writeFileSync(join(dir, 'a-file'), 'a file, not a directory'),
  });
  // symlink: a spec file linked from outside the directory is never read
  const linked = taskObject('linked-spec', fullSpec());
  cases.push({
    file: `${name()}.yaml`,
    text: JSON.stringify(linked),
    field: 'a symlink leading outside',
    crd: false,
    linkedFromOutside: true,
  });
  // dependency cycles across files, through a task whose own spec is invalid (run walks dependsOn as written)
  task('cyc-valid', { dependsOn: ['cyc-invalid'] }, 'spec.dependsOn');
  task('cyc-invalid', { dependsOn: ['cyc-valid'], limits: { maxEpisodez: 1 } }, 'spec.limits.maxEpisodez');
  task('tri-a', { dependsOn: ['tri-b'] }, 'spec.dependsOn');
  task('tri-b', { dependsOn: ['tri-c'] }, 'spec.dependsOn');
  task('tri-c', { dependsOn: ['tri-a'] }, 'spec.dependsOn');
  // documents without a kind, or with a kind this API group does not have
  const noKind = { apiVersion: API_VERSION, metadata: { name: 'no-kind' }, spec: fullSpec() };
  cases.push({ file: `${name()}.yaml`, text: JSON.stringify(noKind), field: 'kind', crd: false });
  const typo = { ...taskObject('kind-typo', fullSpec()), kind: 'AgentTasks' };
  cases.push({ file: `${name()}.yaml`, text: JSON.stringify(typo), field: 'kind', crd: false });
  // warnings: legal, but the first episode would fail
  task('cmd-missing', { agent: { command: ['episodic-no-such-agent-xyz', '-p'] } }, 'spec.agent.command', {
    warning: true,
  });
  task('cmd-one-string', { agent: { command: ["node -e 'process.exit(0)' --flag"] } }, 'spec.agent.command', {
    warning: true,
  });
  task('ws-similar', { workspace: 'ws/ws-simliar' }, 'spec.workspace', {
    warning: true,
    setup: (dir) => mkdirSync(join(dir, 'ws', 'ws-similar'), { recursive: true }),
  });
  return cases;
}
