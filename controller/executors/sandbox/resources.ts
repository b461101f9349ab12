// spec.sandbox.resources carried out: a cgroup per episode (v2 where writable with the controllers, else v1)
// where the controller can write the hierarchy, else rlimits through prlimit (address space; RLIMIT_NPROC does
// not bind root, and no rlimit bounds a CPU share). The decisions (which enforcer: cgroup-detect.ts; which
// files; whether a bound was hit) are pure; this file gathers the facts and writes the files.
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ResourceLimit, SandboxResources } from '../../api/sandbox.ts';
import { cgroupMounts, chooseEnforcer } from './cgroup-detect.ts';
import type { CgroupController, CgroupFacts, Enforcer } from './cgroup-detect.ts';

const CPU_PERIOD_US = 100_000;
// The launcher joins the group before it execs bwrap, so nothing of the episode starts outside it. A fixed
// script: the paths and the argv are its arguments, never part of it.
const JOIN_AND_EXEC =
  'for g; do [ "$g" = -- ] && break; echo $$ > "$g/cgroup.procs" || exit 125; shift; done; shift; exec "$@"';

type Controller = CgroupController;

/** The files a cgroup v1 group of these resources gets, and what they say. */
export function cgroupSettings(r: SandboxResources): Array<{ controller: Controller; file: string; value: string }> {
  const out: Array<{ controller: Controller; file: string; value: string }> = [];
  if (r.memoryMiB !== undefined) {
    const bytes = String(r.memoryMiB * 1024 * 1024);
    out.push({ controller: 'memory', file: 'memory.limit_in_bytes', value: bytes });
  }
  if (r.pids !== undefined) out.push({ controller: 'pids', file: 'pids.max', value: String(r.pids) });
  if (r.cpu !== undefined)
    out.push(
      { controller: 'cpu', file: 'cpu.cfs_period_us', value: String(CPU_PERIOD_US) },
      { controller: 'cpu', file: 'cpu.cfs_quota_us', value: String(Math.round(r.cpu * CPU_PERIOD_US)) },
    );
  return out;
}

/** The files a cgroup v2 group of these resources gets (one directory holds every controller's). */
export function cgroupV2Settings(r: SandboxResources): Array<{ controller: Controller; file: string; value: string }> {
  return cgroupSettings(r).flatMap((s) => {
    if (s.file === 'memory.limit_in_bytes') return [{ ...s, file: 'memory.max' }];
    if (s.file === 'cpu.cfs_quota_us') return [{ ...s, file: 'cpu.max', value: `${s.value} ${CPU_PERIOD_US}` }];
    return s.file === 'cpu.cfs_period_us' ? [] : [s];
  });
}

/** prlimit's options for the rlimit fallback: address space only (the one rlimit that binds root here). */
export function rlimitArgs(r: SandboxResources): string[] {
  const out: string[] = [];
  if (r.memoryMiB !== undefined) out.push(`--as=${r.memoryMiB * 1024 * 1024}`);
  if (r.pids !== undefined) out.push(`--nproc=${r.pids}`);
  return out;
}

/** The counters of a group after (or during) the episode: which bound it hit, if any. */
export function limitHit(counters: { oomKills: number; pidsRefused: number }): ResourceLimit | undefined {
  if (counters.oomKills > 0) return 'memory';
  if (counters.pidsRefused > 0) return 'pids';
  return undefined;
}

/** "oom_kill 2" of memory.oom_control, "max 5" of pids.events. */
export function counterOf(text: string, name: string): number {
  const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

export interface EpisodeGroup {
  how: 'cgroup-v2' | 'cgroup-v1' | 'rlimit' | 'none';
  /** Put before bwrap's argv. */
  prefix: string[];
  hit(): ResourceLimit | undefined;
  /** The group's directories removed, once what is left in them is killed and reaped. */
  remove(): Promise<void>;
}

function controllersOf(r: SandboxResources): Controller[] {
  return [...new Set(cgroupSettings(r).map((s) => s.controller))];
}

const enforcers = new Map<string, Enforcer>();
/** Which enforcer binds these controllers here: decided once per set (the mounts do not change under us). */
export function enforcerFor(needs: Controller[], facts: () => CgroupFacts = hostFacts): Enforcer {
  const key = needs.join(',');
  let e = enforcers.get(key);
  if (!e) {
    e = chooseEnforcer(needs, facts());
    enforcers.set(key, e);
  }
  return e;
}

/** A group for one episode (named uniquely by `name`), or rlimits when no hierarchy can be written. */
export function episodeGroup(name: string, r: SandboxResources, enforcer?: Enforcer): EpisodeGroup {
  const controllers = controllersOf(r);
  if (controllers.length === 0) return { how: 'none', prefix: [], hit: () => undefined, remove: async () => {} };
  const e = enforcer ?? enforcerFor(controllers);
  const made = e.how === 'rlimit' ? undefined : makeGroup(e, name, r, controllers);
  if (!made)
    return { how: 'rlimit', prefix: ['prlimit', ...rlimitArgs(r), '--'], hit: () => undefined, remove: async () => {} };
  const { dirs, counters } = made;
  const read = (dir: string | undefined, file: string, counter: string) => {
    if (!dir) return 0;
    try {
      return counterOf(readFileSync(join(dir, file), 'utf8'), counter);
    } catch {
      return 0;
    }
  };
  const unique = [...new Set(dirs.values())];
  return {
    how: e.how as 'cgroup-v1' | 'cgroup-v2',
    prefix: ['/bin/sh', '-c', JOIN_AND_EXEC, 'episodic-cgroup', ...unique, '--'],
    hit: () =>
      limitHit({
        oomKills: read(dirs.get('memory'), counters.memory, 'oom_kill'),
        pidsRefused: read(dirs.get('pids'), 'pids.events', 'max'),
      }),
    remove: () => removeDirs(unique),
  };
}

/** The episode's directories with their bound files written, or undefined (then rlimits) when that fails. */
function makeGroup(e: Exclude<Enforcer, { how: 'rlimit' }>, name: string, r: SandboxResources, needs: Controller[]) {
  const v2 = e.how === 'cgroup-v2';
  const dirs = new Map(needs.map((c) => [c, join(v2 ? e.dir : (e.dirs[c] as string), name)]));
  try {
    for (const dir of new Set(dirs.values())) mkdirSync(dir, { recursive: true });
    for (const s of v2 ? cgroupV2Settings(r) : cgroupSettings(r))
      writeFileSync(join(dirs.get(s.controller) as string, s.file), s.value);
  } catch {
    for (const dir of new Set(dirs.values())) tryRmdir(dir);
    return undefined;
  }
  return { dirs, counters: { memory: v2 ? 'memory.events' : 'memory.oom_control' } };
}

/** This host's facts: the mount table, v2's controllers, and whether an "episodic" directory could be made. */
function hostFacts(): CgroupFacts {
  const read = (file: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return '';
    }
  };
  const mountinfo = read('/proc/self/mountinfo');
  const v2 = cgroupMounts(mountinfo).v2;
  const v2Controllers = v2 ? read(join(v2, 'cgroup.controllers')) : '';
  return {
    mountinfo,
    v2Controllers,
    writable: (mountPoint) => {
      try {
        mkdirSync(join(mountPoint, 'episodic'), { recursive: true });
        // v2 hands a controller down only where each parent's subtree_control names it.
        if (mountPoint === v2) for (const dir of [v2, join(v2, 'episodic')]) delegate(dir, v2Controllers);
        return true;
      } catch {
        return false;
      }
    },
  };
}

function delegate(dir: string, available: string): void {
  for (const c of ['memory', 'pids', 'cpu'])
    if (available.split(/\s+/).includes(c)) writeFileSync(join(dir, 'cgroup.subtree_control'), `+${c}`);
}

// A killed process stays in its group until it is reaped, and bwrap exits before its sandbox's init is (that
// init's end is the kernel's, ~1 ms later): rmdir is retried soon at first, then less often, within the budget.
const REMOVE_BUDGET_MS = 1000;
const REMOVE_MAX_WAIT_MS = 25;

/** How long to wait before each retry of a group's rmdir: 1, 2, 4… ms up to the max, summing to the budget. */
export function removeRetryDelays(budgetMs = REMOVE_BUDGET_MS, maxWaitMs = REMOVE_MAX_WAIT_MS): number[] {
  const delays: number[] = [];
  for (let spent = 0, next = 1; spent < budgetMs; next = Math.min(next * 2, maxWaitMs)) {
    const wait = Math.min(next, budgetMs - spent);
    delays.push(wait);
    spent += wait;
  }
  return delays;
}

async function removeDirs(dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    for (const wait of [...removeRetryDelays(), undefined]) {
      if (tryRmdir(dir) || wait === undefined) break;
      killMembers(dir); // a process that outlived the episode's kill (a fork bomb's late children)
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}

/** True once the directory is gone (or never was). */
function tryRmdir(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

function killMembers(dir: string): void {
  let pids: number[] = [];
  try {
    pids = readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return;
  }
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}
