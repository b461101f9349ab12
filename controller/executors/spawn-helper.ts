// The controller's side of spawn-helper.pl: one long-lived helper process starts agent processes for us, so
// the controller never fork()s its own (large) heap per episode. See spawn-helper.pl for the why and the
// protocol. Without Perl (or with EPISODIC_SPAWNER=direct) the local controller spawns directly instead.
import { spawn } from 'node:child_process';
import type { ChildProcessByStdio } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { existsSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';

export interface HelperSpawnRequest {
  argv: string[];
  cwd: string;
  /** Added to the helper's environment (which is the controller's, from when the helper started). */
  env: Record<string, string>;
  /** Becomes stdin; /dev/null without it. */
  stdinFile?: string;
  /** Appended to (created if missing). */
  stdoutFile: string;
  /** Truncated when the child starts. */
  stderrFile: string;
  /** Stop the child just before exec until release(): the caller can record the pid first. */
  hold?: boolean;
}

export interface HelperExit {
  code: number | null;
  signal?: NodeJS.Signals;
  /** Set when the helper itself died: the child's fate is unknown (it may still run). */
  helperLost?: string;
  /** A held child could not be set up or exec'd (e.g. ENOENT), reported after its pid: nothing ran. */
  spawnError?: { code: string; message: string };
}

export type HelperSpawnResult =
  /** release() lets a held child exec (a no-op otherwise). */
  | { ok: true; pid: number; exit: Promise<HelperExit>; release(): void }
  | { ok: false; code: string; message: string };

interface Pending {
  resolveStart(result: HelperSpawnResult): void;
  /** Settles with resolveStart. */
  started: Promise<unknown>;
  resolveExit?: (exit: HelperExit) => void;
  pid?: number;
  held: boolean;
}

const SCRIPT = fileURLToPath(new URL('./spawn-helper.pl', import.meta.url));
const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, n]) => [n, name as NodeJS.Signals]));

export class SpawnHelper {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly livePids = new Set<number>();
  private buffered = '';
  private dead: string | undefined;

  /** The helper's pid: orphans of our episodes become its children. */
  pid = 0;
  /** Whether it is a child subreaper (Linux); without that, leftovers cannot be ruled out cheaply. */
  subreaper = false;
  private readonly ready: Promise<void>;
  private onReady?: () => void;

  private readonly child: ChildProcessByStdio<Writable, Readable, null>;

  private constructor(child: ChildProcessByStdio<Writable, Readable, null>) {
    this.child = child;
    this.ready = new Promise<void>((resolve, reject) => {
      this.onReady = resolve;
      child.once('error', reject);
      child.once('exit', (code, signal) => reject(new Error(`the spawn helper exited (${signal ?? `code ${code}`}) before it was ready`)));
    });
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text: string) => this.onData(text));
    child.on('exit', (code, signal) => this.onDead(`the spawn helper exited (${signal ?? `code ${code}`})`));
    child.on('error', (err) => this.onDead(`the spawn helper failed: ${err.message}`));
    child.stdin.on('error', () => undefined); // EPIPE once it is gone; 'exit' reports that
    this.updateRef();
  }

  /** Starts a helper; rejects when Perl (or the script) is not usable here. */
  static async start(perl = 'perl'): Promise<SpawnHelper> {
    if (!existsSync(SCRIPT)) throw new Error(`spawn helper script missing: ${SCRIPT}`);
    const child = spawn(perl, [SCRIPT], { stdio: ['pipe', 'pipe', 'inherit'] });
    const helper = new SpawnHelper(child);
    (helper.child.stdout as Socket).ref(); // until READY
    try {
      await helper.ready;
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    }
    helper.updateRef();
    return helper;
  }

  /** Starts argv; resolves once it was exec'd (with its exit to come) or could not be. */
  spawn(req: HelperSpawnRequest): Promise<HelperSpawnResult> {
    if (this.dead) return Promise.resolve({ ok: false, code: 'EHELPER', message: this.dead });
    if (req.argv.length === 0) return Promise.resolve({ ok: false, code: 'ENOENT', message: 'empty argv' });
    const id = this.nextId++;
    const env = Object.entries(req.env).map(([k, v]) => `${k}=${v}`);
    const fields = [req.hold ? 'hold' : 'run', String(id), req.cwd, req.stdinFile ?? '', req.stdoutFile, req.stderrFile, String(req.argv.length), ...req.argv, ...env];
    const bad = fields.find((f) => f.includes('\0'));
    if (bad !== undefined) return Promise.resolve({ ok: false, code: 'EINVAL', message: `NUL byte in ${JSON.stringify(bad)}` });
    let resolveStart!: (result: HelperSpawnResult) => void;
    const started = new Promise<HelperSpawnResult>((resolve) => (resolveStart = resolve));
    this.pending.set(id, { resolveStart, started, held: req.hold === true });
    this.updateRef();
    this.child.stdin.write(`${fields.length}\0${fields.join('\0')}\0`);
    return started;
  }

  /**
   * After an episode's process exited: could it have left anything running? False only when its process
   * group is empty and nothing but our own live episodes is parented to the helper (orphans land there).
   * A child forked for a spawn we have not heard back about yet looks like an orphan: wait for those.
   */
  async mayHaveLeftovers(pgid: number): Promise<boolean> {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      // ESRCH: the group is empty. (EPERM cannot happen for our own children.)
    }
    if (!this.subreaper || this.dead) return true;
    const before = this.strangers();
    if (before === undefined) return true;
    if (before.length === 0) return false;
    // A stranger may be a fork for a spawn whose reply is still on its way: once the spawns in flight now
    // have answered, such a child is either known (running) or reaped. Whatever is left is an orphan.
    await Promise.all([...this.pending.values()].filter((p) => p.pid === undefined).map((p) => p.started));
    const after = this.strangers();
    return after === undefined || after.some((pid) => before.includes(pid));
  }

  /** The helper's children that are not our running episodes; undefined when that cannot be read. */
  private strangers(): number[] | undefined {
    let children: string;
    try {
      children = readFileSync(`/proc/${this.pid}/task/${this.pid}/children`, 'utf8');
    } catch {
      return undefined; // kernel without CONFIG_PROC_CHILDREN
    }
    return children
      .split(' ')
      .filter((p) => p.trim() !== '')
      .map(Number)
      .filter((pid) => !this.livePids.has(pid));
  }

  /** Ends the helper (running children are left alone, as on a controller crash). */
  close(): void {
    this.child.stdin.end();
  }

  private onData(text: string): void {
    this.buffered += text;
    let nl: number;
    while ((nl = this.buffered.indexOf('\n')) >= 0) {
      const line = this.buffered.slice(0, nl);
      this.buffered = this.buffered.slice(nl + 1);
      this.onLine(line);
    }
  }

  private onLine(line: string): void {
    const [kind, idText, a, b] = line.split(' ', 4);
    if (kind === 'READY') {
      this.pid = Number(idText);
      this.subreaper = a === '1';
      this.onReady?.();
      return;
    }
    const id = Number(idText);
    const p = this.pending.get(id);
    if (!p) return;
    if (kind === 'S') {
      const pid = Number(a);
      p.pid = pid;
      this.livePids.add(pid);
      const exit = new Promise<HelperExit>((resolve) => (p.resolveExit = resolve));
      let released = !p.held;
      const release = () => {
        if (released || this.dead || !this.pending.has(id)) return;
        released = true;
        this.child.stdin.write(`2\0go\0${id}\0`);
      };
      p.resolveStart({ ok: true, pid, exit, release });
    } else if (kind === 'F') {
      this.pending.delete(id);
      const failure = { code: a ?? 'ESPAWN', message: line.split(' ').slice(3).join(' ') };
      if (p.resolveExit) {
        // A held child that could not be set up or exec'd: it was reaped; nothing ran.
        if (p.pid !== undefined) this.livePids.delete(p.pid);
        p.resolveExit({ code: null, spawnError: failure });
      } else p.resolveStart({ ok: false, ...failure });
    } else if (kind === 'X') {
      this.pending.delete(id);
      if (p.pid !== undefined) this.livePids.delete(p.pid);
      const signal = b === '-' || b === undefined ? undefined : SIGNAL_NAMES.get(Number(b));
      p.resolveExit?.({ code: a === '-' ? null : Number(a), ...(signal ? { signal } : {}) });
    }
    this.updateRef();
  }

  private onDead(reason: string): void {
    if (this.dead) return;
    this.dead = reason;
    for (const p of this.pending.values()) {
      if (p.resolveExit) p.resolveExit({ code: null, helperLost: reason });
      else p.resolveStart({ ok: false, code: 'EHELPER', message: reason });
    }
    this.pending.clear();
    this.livePids.clear();
  }

  /** Keep the controller's event loop alive only while something of ours is in flight. */
  private updateRef(): void {
    this.child.unref();
    const out = this.child.stdout as Socket; // a pipe to a child is a net.Socket
    if (this.pending.size > 0) out.ref();
    else out.unref();
  }

  get alive(): boolean {
    return this.dead === undefined;
  }
}

let shared: Promise<SpawnHelper | undefined> | undefined;

/**
 * The process-wide helper, started on first use and restarted if it died; undefined when it cannot run here
 * (no Perl, not Linux/macOS) or EPISODIC_SPAWNER=direct. `onUnavailable` hears why, once.
 * `shared` is replaced synchronously, so callers arriving together chain on one start (or one restart).
 */
export function sharedSpawnHelper(onUnavailable?: (why: string) => void): Promise<SpawnHelper | undefined> {
  if (process.env.EPISODIC_SPAWNER === 'direct' || process.platform === 'win32') return Promise.resolve(undefined);
  const start = () =>
    SpawnHelper.start().catch((err: unknown) => {
      onUnavailable?.(err instanceof Error ? err.message : String(err));
      return undefined;
    });
  const previous = shared;
  shared = previous ? previous.then((helper) => (helper === undefined || helper.alive ? helper : start())) : start();
  return shared;
}
