// spec.sandbox.resources carried out: a cgroup v1 group per episode (memory, pids, cpu) where the controller
// can write the hierarchy, else rlimits through prlimit (address space; RLIMIT_NPROC does not bind root, and no
// rlimit bounds a CPU share). The decisions (which enforcer, which files, whether a bound was hit) are pure.
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ResourceLimit, SandboxResources } from '../../api/sandbox.ts';

export const CGROUP_V1_ROOT = '/sys/fs/cgroup';
const CPU_PERIOD_US = 100_000;
// The launcher joins the group before it execs bwrap, so nothing of the episode starts outside it. A fixed
// script: the paths and the argv are its arguments, never part of it.
const JOIN_AND_EXEC =
  'for g; do [ "$g" = -- ] && break; echo $$ > "$g/cgroup.procs" || exit 125; shift; done; shift; exec "$@"';

type Controller = 'memory' | 'pids' | 'cpu';

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
  how: 'cgroup-v1' | 'rlimit' | 'none';
  /** Put before bwrap's argv. */
  prefix: string[];
  hit(): ResourceLimit | undefined;
  /** The group's directories removed, once what is left in them is killed and reaped. */
  remove(): Promise<void>;
}

function controllersOf(r: SandboxResources): Controller[] {
  return [...new Set(cgroupSettings(r).map((s) => s.controller))];
}

/** A group for one episode (named uniquely by `name`), or rlimits when the hierarchy cannot be written. */
export function episodeGroup(name: string, r: SandboxResources, root = CGROUP_V1_ROOT): EpisodeGroup {
  const controllers = controllersOf(r);
  if (controllers.length === 0) return { how: 'none', prefix: [], hit: () => undefined, remove: async () => {} };
  const dirs = new Map(controllers.map((c) => [c, join(root, c, 'episodic', name)]));
  try {
    for (const dir of dirs.values()) mkdirSync(dir, { recursive: true });
    for (const s of cgroupSettings(r)) writeFileSync(join(dirs.get(s.controller) as string, s.file), s.value);
  } catch {
    for (const dir of dirs.values()) tryRmdir(dir);
    return { how: 'rlimit', prefix: ['prlimit', ...rlimitArgs(r), '--'], hit: () => undefined, remove: async () => {} };
  }
  const read = (c: Controller, file: string, counter: string) => {
    const dir = dirs.get(c);
    if (!dir) return 0;
    try {
      return counterOf(readFileSync(join(dir, file), 'utf8'), counter);
    } catch {
      return 0;
    }
  };
  return {
    how: 'cgroup-v1',
    prefix: ['/bin/sh', '-c', JOIN_AND_EXEC, 'episodic-cgroup', ...dirs.values(), '--'],
    hit: () =>
      limitHit({
        oomKills: read('memory', 'memory.oom_control', 'oom_kill'),
        pidsRefused: read('pids', 'pids.events', 'max'),
      }),
    remove: () => removeDirs([...dirs.values()]),
  };
}

// A killed process stays in its group until it is reaped: rmdir is retried this often, this far apart.
const REMOVE_TRIES = 40;
const REMOVE_EVERY_MS = 25;

async function removeDirs(dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    for (let i = 0; i < REMOVE_TRIES && !tryRmdir(dir); i++) {
      killMembers(dir); // a process that outlived the episode's kill (a fork bomb's late children)
      await new Promise((r) => setTimeout(r, REMOVE_EVERY_MS));
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
