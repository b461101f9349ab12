// The relay of network: gateway, started once per task and kept (README "Sandbox"): a relay process
// (relay-process.ts) bound to the task. Every process of the task's episodes enters its namespace (nsenter, by
// descriptors the controller holds) instead of starting a Node relay of its own, which cost 150–400 ms an
// episode here. While the controller has gateway tasks one more relay is kept started, bound to none, so the
// next task's first episode takes it instead of waiting for a Node start (relay-choice.ts says when). A holder
// ends LINGER_MS after its task's last episode, or with the controller.
import type { ChildProcess } from 'node:child_process';
import { closeSync, existsSync, rmSync } from 'node:fs';
import { joinNetArgv } from './bwrap-argv.ts';
import { openGatewayBridge } from './gateway-bridge.ts';
import type { GatewayBridge } from './gateway-bridge.ts';
import { relayAssignment } from './gateway-routes.ts';
import type { GatewayRoutes } from './gateway-routes.ts';
import { relaySource, spareAction } from './relay-choice.ts';
import { relayBaseKey, startRelayProcess } from './relay-process.ts';
import type { RelayBase, RelayProcess } from './relay-process.ts';

export const NSENTER = '/usr/bin/nsenter';
/** Between a task's episodes (retries, the next step) the relay stays; after this long unused it goes. */
const LINGER_MS = 60_000;

export interface RelayLease {
  /** Put before bwrap: the process enters the task's relay namespace. */
  prefix: string[];
  /** The holder's sandbox init as the host sees it (the relay is its child). */
  pid: number;
  /** This episode is done with it: what the proxy refused meanwhile. Idempotent. */
  release(): string[];
}

export interface RelayRequest extends RelayBase {
  /** The task's identity: one holder per task, never shared with another. */
  task: string;
  routes: GatewayRoutes;
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
    () => {
      if (holders.get(req.task) === entry) holders.delete(req.task);
      keepSpare();
    },
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
  const taken = takeSpare(req);
  let holder: Holder;
  try {
    holder = await bindRelay(req, key, await (taken ?? startRelayProcess(req)));
  } catch (err) {
    if (!taken) throw err;
    holder = await bindRelay(req, key, await startRelayProcess(req)); // the spare had died: a new one, once
  }
  keepSpare(req);
  return holder;
}

/** The relay given to the task: the task's sockets opened in its directory, then its ports and sockets sent. */
async function bindRelay(req: RelayRequest, key: string, relay: RelayProcess): Promise<Holder> {
  let bridge: GatewayBridge | undefined;
  try {
    bridge = await openGatewayBridge(req.routes, relay.socketDir);
    await relay.assign(relayAssignment(req.routes));
  } catch (err) {
    relay.discard();
    await bridge?.close();
    throw new Error(`spec.sandbox.network gateway: the relay did not start: ${(err as Error).message}`);
  }
  const { child, held, inner } = relay;
  const holder: Holder = { key, child, bridge, held, inner, leases: 0, retired: false, ended: false };
  live.add(holder);
  linger(holder); // a lease clears it; a warmed relay no episode asked for ends like an idle one
  onExitEndAll();
  child.once('exit', () => cleanUp(holder));
  return holder;
}

let spare: { baseKey: string; ready: Promise<RelayProcess>; started?: RelayProcess } | undefined;
let spareBase: RelayBase | undefined;

/** The spare for this request's relay, if relaySource says so: it is the task's from now on, never a spare. */
function takeSpare(base: RelayBase): Promise<RelayProcess> | undefined {
  const state = spare === undefined ? 'none' : spare.started ? 'started' : 'starting';
  if (relaySource({ spare: state, sameBase: spare?.baseKey === relayBaseKey(base) }) === 'start') return undefined;
  const taken = spare?.ready;
  spare = undefined;
  return taken;
}

/** Starts or ends the spare as spareAction says, for the controller's current gateway tasks. */
function keepSpare(base = spareBase): void {
  if (!base) return;
  spareBase = { bwrap: base.bwrap, command: base.command, readOnly: base.readOnly, rootLinks: base.rootLinks };
  const baseKey = relayBaseKey(base);
  if (spare && spare.baseKey !== baseKey) discardSpare(); // the relay's install changed: the old spare is no use
  const state = spare === undefined ? 'none' : spare.started ? 'started' : 'starting';
  const action = spareAction({ spare: state, gatewayTasks: holders.size });
  if (action === 'end') discardSpare();
  if (action !== 'start') return;
  const entry: NonNullable<typeof spare> = { baseKey, ready: startRelayProcess(spareBase) };
  spare = entry;
  entry.ready.then(
    (relay) => {
      entry.started = relay;
      relay.child.once('exit', () => {
        if (spare !== entry) return; // taken: its holder's to clean up
        spare = undefined;
        relay.discard(); // died unused: its descriptors and empty directory go
      });
    },
    () => spare === entry && (spare = undefined), // not retried until the next task's relay
  );
}

function discardSpare(): void {
  const gone = spare;
  spare = undefined;
  void gone?.ready.then(
    (relay) => relay.discard(),
    () => undefined,
  );
}

/** The spare relay's namespace init once it is started (for tests and bench/); undefined when there is none. */
export async function spareStarted(): Promise<number | undefined> {
  return spare?.ready.then(
    (relay) => relay.inner,
    () => undefined,
  );
}

function end(holder: Holder): void {
  if (holder.ended) return;
  holder.ended = true;
  forget(holder);
  holder.child.kill('SIGKILL'); // bwrap's --die-with-parent ends the relay with it
}

/** No new lease finds it; the spare goes with the controller's last gateway task. */
function forget(holder: Holder): void {
  for (const [task, entry] of holders) if (entry.holder === holder) holders.delete(task);
  keepSpare();
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
    spare?.started?.discard();
  });
}
