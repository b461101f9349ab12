// Which enforcer binds spec.sandbox.resources here (README "Sandbox"): cgroup v2 where its hierarchy has the
// controllers and the controller can write it, else cgroup v1 where every needed controller is mounted and
// writable, else rlimits (prlimit). Pure: the mount table, v2's controllers and what could be written are facts.
import { join } from 'node:path';

export type CgroupController = 'memory' | 'pids' | 'cpu';
export type Enforcer =
  | { how: 'cgroup-v2'; dir: string }
  | { how: 'cgroup-v1'; dirs: Partial<Record<CgroupController, string>> }
  | { how: 'rlimit' };

/** The cgroup mounts of /proc/self/mountinfo: v2's mount point, and v1's per controller. */
export function cgroupMounts(mountinfo: string): { v2?: string; v1: Partial<Record<CgroupController, string>> } {
  const out: { v2?: string; v1: Partial<Record<CgroupController, string>> } = { v1: {} };
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (right === undefined) continue;
    const mountPoint = left.split(' ')[4];
    const [fsType, , superOptions = ''] = right.split(' ');
    if (fsType === 'cgroup2') out.v2 ??= mountPoint;
    if (fsType !== 'cgroup') continue;
    for (const option of superOptions.split(','))
      if (option === 'memory' || option === 'pids' || option === 'cpu') out.v1[option] ??= mountPoint;
  }
  return out;
}

export interface CgroupFacts {
  mountinfo: string;
  /** cgroup.controllers at v2's mount point (empty when none are delegated to v2: a hybrid host). */
  v2Controllers: string;
  /** The hierarchies whose "episodic" directory the controller made or found, writable. */
  writable: (mountPoint: string) => boolean;
}

/** The one rule: v2 if it holds every needed controller and is writable; v1 if each is; else rlimits. */
export function chooseEnforcer(needs: readonly CgroupController[], facts: CgroupFacts): Enforcer {
  const mounts = cgroupMounts(facts.mountinfo);
  const v2Has = new Set(facts.v2Controllers.trim().split(/\s+/));
  if (mounts.v2 && needs.every((c) => v2Has.has(c)) && facts.writable(mounts.v2))
    return { how: 'cgroup-v2', dir: join(mounts.v2, 'episodic') };
  const v1 = needs.map((c) => [c, mounts.v1[c]] as const);
  if (v1.every(([, at]) => at !== undefined && facts.writable(at)))
    return { how: 'cgroup-v1', dirs: Object.fromEntries(v1.map(([c, at]) => [c, join(at as string, 'episodic')])) };
  return { how: 'rlimit' };
}
