// Finding and killing every process an episode started, including grandchildren that escaped the process
// group with setsid() or were reparented to init when their parent exited. Linux /proc based; elsewhere it
// falls back to signalling the process group only.
import { readFileSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Env var set on every episode process with a random value. Children inherit it, so it finds descendants
 * whose parent link is gone (double-forked daemons) and lets a restarted controller find an orphan's tree.
 */
export const TREE_MARKER_ENV = 'EPISODIC_PROCESS_TREE';

const POLL_MS = 50;
// After SIGKILL the kernel needs a moment to tear processes down; don't wait forever for unkillable (D state) ones.
const AFTER_KILL_WAIT_MS = 2000;

export interface ProcStat {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  state: string;
  /** Field 22 of /proc/PID/stat: clock ticks since boot. Same pid + same start time = same process. */
  startTime: string;
}

export function readProcStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // comm (field 2) may contain spaces and parentheses: split after the LAST ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  if (rest.length < 20) return undefined;
  return {
    pid,
    state: rest[0],
    ppid: Number(rest[1]),
    pgid: Number(rest[2]),
    sid: Number(rest[3]),
    startTime: rest[19],
  };
}

/** The /proc start time of a live process, or undefined (gone, zombie, or no /proc). */
export function readPidStartTime(pid: number): string | undefined {
  const stat = readProcStat(pid);
  return stat && !isDeadState(stat.state) ? stat.startTime : undefined;
}

/** One variable from a process's initial environment (same user only). */
export function readProcEnv(pid: number, name: string): string | undefined {
  let buf: Buffer;
  try {
    buf = readFileSync(`/proc/${pid}/environ`);
  } catch {
    return undefined;
  }
  const prefix = `${name}=`;
  for (const entry of buf.toString('utf8').split('\0')) {
    if (entry.startsWith(prefix)) return entry.slice(prefix.length);
  }
  return undefined;
}

function isDeadState(state: string): boolean {
  // Zombies are dead for our purposes: they cannot run, and an init that never reaps keeps them forever.
  return state === 'Z' || state === 'X' || state === 'x';
}

let ownGroup: number | undefined;
function ownPgid(): number | undefined {
  ownGroup ??= readProcStat(process.pid)?.pgid;
  return ownGroup;
}

let procMounted: boolean | undefined;
function hasProc(): boolean {
  procMounted ??= readProcStat(process.pid) !== undefined;
  return procMounted;
}

/** Where the kernel's pid counter stood: processes created later got the pids after `lastPid`, cyclically. */
export interface PidCursor {
  lastPid: number;
  /** Processes and threads created since boot (all namespaces): tells whether the counter went round. */
  forks: number;
}

/** Now; undefined without /proc. */
export function pidCursor(): PidCursor | undefined {
  try {
    const lastPid = Number(readFileSync('/proc/loadavg', 'utf8').trim().split(' ').pop());
    const forks = Number(/^processes (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1]);
    return Number.isInteger(lastPid) && Number.isInteger(forks) ? { lastPid, forks } : undefined;
  } catch {
    return undefined;
  }
}

let pidMax: number | undefined;
/** Whether a pid was handed out after `since`; undefined when that cannot be told (the counter may have gone round). */
function allocatedSince(since: PidCursor | undefined): ((pid: number) => boolean) | undefined {
  const now = since && pidCursor();
  pidMax ??= Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8')) || 0;
  // After wrapping, the kernel hands out pids from 300 up again.
  if (!since || !now || now.forks - since.forks >= pidMax - 300) return undefined;
  const { lastPid: from } = since;
  const { lastPid: to } = now;
  return to >= from ? (pid) => pid > from && pid <= to : (pid) => pid > from || pid <= to;
}

function listLiveProcs(include?: (pid: number) => boolean): ProcStat[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const procs: ProcStat[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name) || (include && !include(Number(name)))) continue;
    const stat = readProcStat(Number(name));
    if (stat && !isDeadState(stat.state)) procs.push(stat);
  }
  return procs;
}

function signal(target: number, sig: NodeJS.Signals): void {
  try {
    process.kill(target, sig);
  } catch {
    // ESRCH (already gone) or EPERM (not ours): nothing more we can do about it.
  }
}

export interface KillTreeOptions {
  /** Time between SIGTERM and SIGKILL. */
  graceMs?: number;
  /** Value of TREE_MARKER_ENV in the tree's processes, when known. */
  marker?: string;
  /**
   * Process group to signal as a whole. Defaults to the root's group when the root leads it. Pass the root's
   * pid explicitly when the leader may already have exited but its group may live on.
   */
  pgid?: number;
  /**
   * The root's /proc start time when it was started. If the pid now belongs to another process, the root
   * and its group are left alone (the kernel never reuses a pid while its group has members).
   */
  startTime?: string;
  /**
   * Taken just before the root was started: then only processes created after it are looked at (all of the
   * tree's are), instead of every process on the machine.
   */
  after?: PidCursor;
}

/**
 * The set of processes that belong to one tree. It only grows: a pid once seen is remembered with its start
 * time, so a later pid reuse is never mistaken for a member.
 */
class ProcessTree {
  readonly members = new Map<number, string>();
  private readonly ownPid = process.pid;
  private readonly ownPgid = ownPgid();
  private readonly markerChecked = new Set<string>();
  readonly groups: number[];
  private readonly marker: string | undefined;
  /** The root's start time: a process started before it cannot have inherited its marker. */
  private readonly since: number;
  private readonly after: PidCursor | undefined;

  constructor(rootPid: number, opts: KillTreeOptions) {
    this.marker = opts.marker;
    this.after = opts.after;
    this.since = opts.startTime === undefined ? 0 : Number(opts.startTime);
    const found = readProcStat(rootPid);
    const reused = found !== undefined && opts.startTime !== undefined && found.startTime !== opts.startTime;
    const root = reused ? undefined : found;
    if (root && !isDeadState(root.state)) this.members.set(rootPid, root.startTime);
    const pgid = reused ? undefined : (opts.pgid ?? (root && root.pgid === rootPid ? rootPid : undefined));
    // Never signal our own group: that would kill the controller.
    this.groups = pgid !== undefined && pgid > 1 && pgid !== this.ownPgid ? [pgid] : [];
  }

  /** Re-scan /proc; returns the members that are alive now (new ones included). */
  refresh(): ProcStat[] {
    const procs = listLiveProcs(allocatedSince(this.after));
    const byPid = new Map(procs.map((p) => [p.pid, p]));
    let grew = true;
    while (grew) {
      grew = false;
      for (const p of procs) {
        if (this.members.get(p.pid) === p.startTime || p.pid === this.ownPid || p.pid <= 1) continue;
        const parent = byPid.get(p.ppid);
        const childOfMember = parent !== undefined && this.members.get(parent.pid) === parent.startTime;
        if (childOfMember || this.groups.includes(p.pgid) || this.carriesMarker(p)) {
          this.members.set(p.pid, p.startTime);
          grew = true;
        }
      }
    }
    return procs.filter((p) => this.members.get(p.pid) === p.startTime);
  }

  private carriesMarker(p: ProcStat): boolean {
    // Reading every process's environment costs more than the rest of a scan; only the young can match.
    if (this.marker === undefined || Number(p.startTime) < this.since) return false;
    const key = `${p.pid}:${p.startTime}`;
    if (this.markerChecked.has(key)) return false;
    this.markerChecked.add(key);
    return readProcEnv(p.pid, TREE_MARKER_ENV) === this.marker;
  }

  signalAll(alive: ProcStat[], sig: NodeJS.Signals, includeGroups = true): void {
    if (includeGroups) for (const g of this.groups) signal(-g, sig);
    for (const p of alive) {
      if (includeGroups && this.groups.includes(p.pgid)) continue; // just got it through the group
      signal(p.pid, sig);
    }
  }
}

/**
 * SIGTERM the whole tree (group + descendants + marker carriers), wait up to graceMs for it to exit, then
 * SIGSTOP everything (so nothing can fork while we look) and SIGKILL it. Resolves once nothing of it is alive.
 */
export async function killProcessTree(pid: number, opts: KillTreeOptions = {}): Promise<void> {
  const graceMs = opts.graceMs ?? 5000;
  if (!hasProc()) return killGroupOnly(opts.pgid ?? pid, graceMs);

  const tree = new ProcessTree(pid, opts);
  let alive = tree.refresh();
  // SIGTERM each process once: many CLIs treat a second SIGTERM as "skip the graceful shutdown".
  const termed = new Set<string>();
  const term = (procs: ProcStat[], includeGroups: boolean) => {
    const fresh = procs.filter((p) => !termed.has(`${p.pid}:${p.startTime}`));
    for (const p of fresh) termed.add(`${p.pid}:${p.startTime}`);
    tree.signalAll(fresh, 'SIGTERM', includeGroups);
    // A stopped process would keep SIGTERM pending forever; let it handle it.
    tree.signalAll(fresh, 'SIGCONT', includeGroups);
  };
  term(alive, true);
  const deadline = Date.now() + graceMs;
  while (alive.length > 0 && Date.now() < deadline) {
    await sleep(POLL_MS);
    alive = tree.refresh();
    term(alive, false); // children forked during the grace period get their SIGTERM too
  }
  if (alive.length === 0) return;

  // Freeze until the member set stops growing, then kill: a stopped process cannot fork a new escapee.
  tree.signalAll(alive, 'SIGSTOP');
  for (;;) {
    const known = tree.members.size;
    alive = tree.refresh();
    tree.signalAll(alive, 'SIGSTOP');
    if (tree.members.size === known) break;
  }
  tree.signalAll(alive, 'SIGKILL');
  const killDeadline = Date.now() + AFTER_KILL_WAIT_MS;
  while (Date.now() < killDeadline) {
    alive = tree.refresh();
    if (alive.length === 0) return;
    tree.signalAll(alive, 'SIGKILL');
    await sleep(POLL_MS);
  }
}

function groupAlive(groups: number[]): boolean {
  return groups.some((g) => {
    try {
      process.kill(-g, 0);
      return true;
    } catch {
      return false;
    }
  });
}

async function killGroupOnly(pgid: number, graceMs: number): Promise<void> {
  signal(-pgid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!groupAlive([pgid])) return;
    await sleep(POLL_MS);
  }
  signal(-pgid, 'SIGKILL');
}

/**
 * After a controller restart: kill an episode that outlived its controller, but only when `pid` is still the
 * same process (its /proc start time matches), never an unrelated process that reused the pid.
 * Returns whether something was killed.
 */
export async function killOrphanEpisode(
  pid: number,
  pidStartTime: string | undefined,
  opts: { graceMs?: number } = {},
): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid || !pidStartTime) return false;
  const stat = readProcStat(pid);
  if (!stat || isDeadState(stat.state) || stat.startTime !== pidStartTime) return false;
  const marker = readProcEnv(pid, TREE_MARKER_ENV);
  await killProcessTree(pid, {
    graceMs: opts.graceMs,
    marker,
    pgid: stat.pgid === pid ? pid : undefined,
    startTime: pidStartTime,
  });
  return true;
}

/**
 * After a controller restart: kill every live process that carries `marker` in TREE_MARKER_ENV (an episode's
 * processes: the agent, verify, whatever they started), with their descendants. A marker is a random UUID,
 * so an unrelated process can never match. Returns whether something was killed.
 */
export async function killMarkedProcesses(marker: string, opts: { graceMs?: number } = {}): Promise<boolean> {
  if (!hasProc() || marker === '') return false;
  const carriers = listLiveProcs().filter(
    (p) => p.pid !== process.pid && readProcEnv(p.pid, TREE_MARKER_ENV) === marker,
  );
  if (carriers.length === 0) return false;
  const root = carriers.find((p) => p.pgid === p.pid) ?? carriers[0];
  await killProcessTree(root.pid, {
    graceMs: opts.graceMs,
    marker,
    pgid: root.pgid === root.pid ? root.pid : undefined,
    startTime: root.startTime,
  });
  return true;
}
