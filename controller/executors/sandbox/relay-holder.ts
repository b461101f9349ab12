// The relay of network: gateway, started once per task and kept (README "Sandbox"): a bwrap whose network
// namespace holds only the relay (relay.ts) on its loopback. Every process of the task's episodes enters that
// namespace (nsenter, by descriptors the controller holds) instead of starting a Node relay of its own, which
// cost 150–400 ms an episode here. A holder ends LINGER_MS after its task's last episode, or with the controller.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { closeSync, existsSync, fstatSync, openSync, readlinkSync, rmSync } from 'node:fs';
import { joinNetArgv, relayHolderArgv } from './bwrap-argv.ts';
import type { RelayPlan } from './bwrap-argv.ts';
import { openGatewayBridge } from './gateway-bridge.ts';
import type { GatewayBridge } from './gateway-bridge.ts';
import { relayArgs } from './gateway-routes.ts';
import type { GatewayRoutes } from './gateway-routes.ts';

export const NSENTER = '/usr/bin/nsenter';
/** Between a task's episodes (retries, the next step) the relay stays; after this long unused it goes. */
const LINGER_MS = 60_000;
const START_TIMEOUT_MS = 30_000;
const INFO_FD = 3;
const STDERR_KEPT = 2048;

export interface RelayLease {
  /** Put before bwrap: the process enters the task's relay namespace. */
  prefix: string[];
  /** The holder's sandbox init as the host sees it (the relay is its child). */
  pid: number;
  /** This episode is done with it: what the proxy refused meanwhile. Idempotent. */
  release(): string[];
}

export interface RelayRequest {
  /** The task's identity: one holder per task, never shared with another. */
  task: string;
  routes: GatewayRoutes;
  bwrap: string;
  /** The relay's command (Node, its script) without --listen pairs, and its install dirs to mount. */
  command: string[];
  readOnly: string[];
  rootLinks: Record<string, string>;
}

interface Holder {
  key: string;
  child: ChildProcess;
  bridge: GatewayBridge;
  held: { pid: number; netFd: number; userFd?: number };
  inner: number;
  leases: number;
  linger?: NodeJS.Timeout;
  /** Replaced (the task's routes changed): ends at its last release instead of lingering. */
  retired: boolean;
  ended: boolean;
  fdsClosed?: boolean;
}

interface Entry {
  key: string;
  ready: Promise<Holder>;
  holder?: Holder;
}

const holders = new Map<string, Entry>();
const live = new Set<Holder>();

export async function leaseRelay(req: RelayRequest): Promise<RelayLease> {
  if (!existsSync(NSENTER))
    throw new Error(`${NSENTER} not found; install the util-linux package (it enters the relay)`);
  const key = keyOf(req);
  let holder = await holderFor(req, key);
  // The relay died (its exit may not have reached us yet; its namespace's init is gone first): a new one, once.
  if (holder.ended || !existsSync(`/proc/${holder.inner}`)) {
    end(holder);
    holder = await holderFor(req, key);
  }
  return lease(holder);
}

/**
 * The task's relay started ahead of its episode (beside the workspace's set-up: a Node start is ~30 ms here), so
 * the lease finds it running. Resolves with the relay namespace's init, or undefined: a failure is the lease's
 * to report. Unleased, it ends after LINGER_MS like an idle one.
 */
export async function warmRelay(req: RelayRequest): Promise<number | undefined> {
  if (!existsSync(NSENTER)) return undefined;
  return holderFor(req, keyOf(req)).then(
    (holder) => holder.inner,
    () => undefined,
  );
}

/** Is the task's relay started or starting (for tests: a warm one is there before the episode asks)? */
export function relayOpening(task: string): boolean {
  return holders.has(task);
}

function keyOf(req: RelayRequest): string {
  return JSON.stringify([req.bwrap, req.command, req.routes.upstreams, req.routes.allow, req.routes.proxyPort]);
}

function holderFor(req: RelayRequest, key: string): Promise<Holder> {
  const known = holders.get(req.task);
  if (known && known.key === key) return known.ready;
  // The spec changed the routes: the old holder goes once its episodes are done.
  if (known) void known.ready.then(retire, () => undefined);
  const entry: Entry = { key, ready: openHolder(req, key) };
  holders.set(req.task, entry);
  entry.ready.then(
    (h) => {
      entry.holder = h;
    },
    () => holders.get(req.task) === entry && holders.delete(req.task),
  );
  return entry.ready;
}

function lease(holder: Holder): RelayLease {
  clearTimeout(holder.linger);
  holder.leases += 1;
  const from = holder.bridge.refused.length;
  let released: string[] | undefined;
  return {
    prefix: joinNetArgv(NSENTER, holder.held),
    pid: holder.inner,
    release() {
      if (released) return released;
      released = holder.bridge.refused.slice(from);
      holder.leases -= 1;
      if (holder.leases === 0) {
        holder.bridge.refused.length = 0; // kept per episode, not for the holder's life
        if (holder.ended) closeFds(holder);
        else if (holder.retired) end(holder);
        else linger(holder);
      }
      return released;
    },
  };
}

function linger(holder: Holder): void {
  holder.linger = setTimeout(() => end(holder), LINGER_MS).unref();
}

/** A task done with its relay (or a bench's throwaway task): it ends now if idle, else at its last release. */
export function endRelay(task: string): void {
  void holders.get(task)?.ready.then(retire, () => undefined);
}

function retire(holder: Holder): void {
  holder.retired = true;
  if (holder.leases === 0) end(holder);
}

async function openHolder(req: RelayRequest, key: string): Promise<Holder> {
  const bridge = await openGatewayBridge(req.routes);
  const plan: RelayPlan = {
    socketDir: bridge.socketDir,
    readOnly: req.readOnly,
    rootLinks: req.rootLinks,
    command: [...req.command, ...relayArgs(req.routes)],
  };
  const argv = relayHolderArgv(req.bwrap, plan, INFO_FD);
  const child = spawn(argv[0], argv.slice(1), {
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  });
  try {
    const info = await started(child);
    const held = holdNamespaces(info);
    const holder: Holder = { key, child, bridge, held, inner: info.pid, leases: 0, retired: false, ended: false };
    live.add(holder);
    linger(holder); // a lease clears it; a warmed relay no episode asked for ends like an idle one
    onExitEndAll();
    child.once('exit', () => cleanUp(holder));
    for (const stream of [child.stdin, child.stdout, child.stderr, child.stdio[INFO_FD]])
      (stream as { unref?: () => void } | null)?.unref?.();
    child.unref(); // the controller may exit with it running: --die-with-parent ends it then
    return holder;
  } catch (err) {
    child.kill('SIGKILL');
    await bridge.close();
    throw new Error(`spec.sandbox.network gateway: the relay did not start: ${(err as Error).message}`);
  }
}

/** Resolves with bwrap's report (the namespace's pid and net inode) once the relay says it listens. */
function started(child: ChildProcess): Promise<{ pid: number; netInode: number }> {
  return new Promise((ready, fail) => {
    let info = '';
    let out = '';
    let err = '';
    let parsed: { pid: number; netInode: number } | undefined;
    let listening = false;
    const timer = setTimeout(() => finish(new Error(`not ready in ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
    const finish = (problem?: Error) => {
      clearTimeout(timer);
      child.removeListener('exit', onExit);
      if (problem || !parsed) fail(problem ?? new Error('no namespace reported'));
      else ready(parsed);
    };
    const check = () => parsed && listening && finish();
    const onExit = (code: number | null, signal: string | null) =>
      finish(new Error(`exited ${signal ?? code}${err.trim() ? `: ${err.trim().split('\n').pop()}` : ''}`));
    child.once('exit', onExit);
    child.once('error', (e) => finish(e));
    child.stdio[INFO_FD]?.on('data', (d: Buffer) => {
      info = (info + d.toString()).slice(0, 4096);
      try {
        const j = JSON.parse(info) as { 'child-pid': number; 'net-namespace': number };
        parsed = { pid: j['child-pid'], netInode: j['net-namespace'] };
        check();
      } catch {
        // not whole yet
      }
    });
    child.stdout?.on('data', (d: Buffer) => {
      out = (out + d.toString()).slice(-64);
      listening ||= out.includes('ready\n');
      check();
    });
    child.stderr?.on('data', (d: Buffer) => {
      err = (err + d.toString()).slice(-STDERR_KEPT);
    });
  });
}

/** Descriptors of the relay's namespaces, checked against bwrap's report (a reused pid is refused). */
function holdNamespaces(info: { pid: number; netInode: number }): Holder['held'] {
  const netFd = openSync(`/proc/${info.pid}/ns/net`, 'r');
  if (fstatSync(netFd).ino !== info.netInode) {
    closeSync(netFd);
    throw new Error('the relay ended before its namespace was held');
  }
  const sameUser = readlinkSync('/proc/self/ns/user') === readlinkSync(`/proc/${info.pid}/ns/user`);
  const userFd = sameUser ? undefined : openSync(`/proc/${info.pid}/ns/user`, 'r');
  return { pid: process.pid, netFd, ...(userFd === undefined ? {} : { userFd }) };
}

function end(holder: Holder): void {
  if (holder.ended) return;
  holder.ended = true;
  forget(holder);
  holder.child.kill('SIGKILL'); // bwrap's --die-with-parent ends the relay with it
}

/** No new lease finds it. */
function forget(holder: Holder): void {
  for (const [task, entry] of holders) if (entry.holder === holder) holders.delete(task);
}

function cleanUp(holder: Holder): void {
  holder.ended = true;
  forget(holder);
  clearTimeout(holder.linger);
  live.delete(holder);
  // Not while an episode may still start a process: its prefix names these numbers, which a new open could reuse.
  if (holder.leases === 0) closeFds(holder);
  void holder.bridge.close();
}

function closeFds(holder: Holder): void {
  if (holder.fdsClosed) return;
  holder.fdsClosed = true;
  for (const fd of [holder.held.netFd, holder.held.userFd]) if (fd !== undefined) closeSync(fd);
}

let exitHook = false;
/** At the controller's exit: every holder killed and its socket directory removed (sync: the loop is over). */
function onExitEndAll(): void {
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    for (const holder of live) {
      holder.child.kill('SIGKILL');
      rmSync(holder.bridge.socketDir, { recursive: true, force: true });
    }
  });
}
