// The pure rules of `spawn` (issue 20): what child a spawn op makes, and what a parent does while it has
// children. A spawn op is untrusted agent input: the child's name stays a DNS label in the parent's
// namespace, its limits never exceed the parent's, and maxChildren and depth bound a spawn storm.
import { posix } from 'node:path';
import { clip } from '../api/bounds.ts';
import type { AgentTaskSpec } from '../api/agent-task.ts';
import type { OpOf } from '../api/ops.ts';
import { DEPTH_LABEL, MAX_CHILDREN_DEFAULT, OWNER_LABELS, SPAWN_DEPTH_MAX } from '../api/spawn-fields.ts';

const NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** Limits a child inherits and may lower, never raise. */
const CAPPED = ['maxEpisodes', 'maxCostUSD', 'maxTokens', 'episodeTimeoutSeconds', 'maxChildren'] as const;
type Capped = (typeof CAPPED)[number];

export interface SpawnParent {
  name: string;
  spec: AgentTaskSpec & { limits: { maxChildren?: number } };
  labels?: Readonly<Record<string, string>>;
  /** Names of the tasks it spawned that exist now: maxChildren bounds them. */
  children: readonly string[];
}

export type ChildPlan =
  | { ok: true; name: string; spec: Record<string, unknown>; labels: Record<string, string>; existing: boolean }
  | { ok: false; message: string };

export function depthOf(labels: Readonly<Record<string, string>> | undefined): number {
  const n = Number(labels?.[DEPTH_LABEL] ?? 0);
  return Number.isInteger(n) && n > 0 ? n : 0;
}

/** The child a spawn op asks for, or why it may not be made. Spawning an existing child again is no new one. */
export function planChild(parent: SpawnParent, op: OpOf<'spawn'>): ChildPlan {
  const name = `${parent.name}-${op.name}`;
  if (!NAME.test(name))
    return refuse(`spawn ${clip(op.name, 40)}: child name ${clip(name, 70)} is not an RFC 1123 label`);
  const existing = parent.children.includes(name);
  const depth = depthOf(parent.labels) + 1;
  if (depth > SPAWN_DEPTH_MAX) return refuse(`spawn ${op.name}: depth ${depth} is past ${SPAWN_DEPTH_MAX}`);
  const max = parent.spec.limits.maxChildren ?? MAX_CHILDREN_DEFAULT;
  if (!existing && parent.children.length >= max) return refuse(`spawn ${op.name}: maxChildren ${max} reached`);
  const limits = childLimits(parent.spec.limits, op.limits ?? {});
  if (typeof limits === 'string') return refuse(`spawn ${op.name}: ${limits}`);
  const workspace = childWorkspace(parent.spec.workspace, op.workspace);
  if (typeof workspace === 'object' && 'refused' in workspace) return refuse(`spawn ${op.name}: ${workspace.refused}`);
  const labels = childLabels(parent, op.labels ?? {}, depth);
  if (typeof labels === 'string') return refuse(`spawn ${op.name}: ${labels}`);
  const spec: Record<string, unknown> = {
    ...(op.prompt !== undefined ? { prompt: op.prompt } : { stack: op.stack }),
    agent: childAgent(parent.spec.agent, op.agent),
    ...(workspace !== undefined ? { workspace } : {}),
    completion: parent.spec.completion,
    limits,
    backoff: parent.spec.backoff,
  };
  return { ok: true, name, spec, labels, existing };
}

function refuse(message: string): ChildPlan {
  return { ok: false, message };
}

/** The parent's limits with the op's lower ones over them; a higher one is refused, not quietly cut. */
function childLimits(
  parent: AgentTaskSpec['limits'] & { maxChildren?: number },
  asked: Partial<Record<Capped, number>>,
): Record<string, number> | string {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(parent)) if (typeof v === 'number') out[k] = v;
  out.maxChildren = parent.maxChildren ?? MAX_CHILDREN_DEFAULT;
  for (const key of CAPPED) {
    const want = asked[key];
    if (want === undefined) continue;
    const cap = out[key];
    if (cap !== undefined && want > cap) return `limits.${key} ${want} is above the parent's ${cap}`;
    out[key] = want;
  }
  return out;
}

/** The parent's workspace, or a directory inside it; never a path leading out or a different kind. */
function childWorkspace(
  parent: AgentTaskSpec['workspace'],
  sub: string | undefined,
): AgentTaskSpec['workspace'] | { refused: string } {
  if (sub === undefined) return parent;
  if (typeof parent !== 'string') return { refused: 'a sub-workspace needs a directory workspace' };
  const joined = posix.normalize(posix.join(parent, sub));
  const inside =
    !posix.isAbsolute(sub) && !sub.split('/').includes('..') && joined.startsWith(`${posix.normalize(parent)}/`);
  return inside ? joined : { refused: "the workspace asked for leads out of the parent's workspace" };
}

/** The parent's agent; the op may name another command and add env (the episode runs where the parent's does). */
function childAgent(parent: AgentTaskSpec['agent'], asked: OpOf<'spawn'>['agent']): AgentTaskSpec['agent'] {
  if (!asked) return parent;
  const env = [...parent.env.filter((e) => !asked.env?.some((a) => a.name === e.name)), ...(asked.env ?? [])];
  return { ...parent, command: asked.command ?? parent.command, env };
}

/** The parent's labels (AgentBudgets select by them), the op's, the owner's and the depth; episodic.dev/ ones are the controller's. */
function childLabels(
  parent: SpawnParent,
  asked: Record<string, string>,
  depth: number,
): Record<string, string> | string {
  const reserved = Object.keys(asked).find((k) => k.startsWith('episodic.dev/'));
  if (reserved) return `label ${clip(reserved, 70)} is the controller's`;
  const bad = Object.entries(asked).find(([k, v]) => !LABEL_KEY.test(k) || !LABEL_VALUE.test(v));
  if (bad) return `label ${clip(bad[0], 70)} is not a valid label`;
  const inherited = Object.fromEntries(
    Object.entries(parent.labels ?? {}).filter(([k]) => !k.startsWith('episodic.dev/')),
  );
  return { ...inherited, ...asked, [OWNER_LABELS.AgentTask]: parent.name, [DEPTH_LABEL]: String(depth) };
}

const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
