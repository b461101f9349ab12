// A relay process (README "Sandbox"): a bwrap whose network namespace holds only the relay (relay.ts), its
// socket directory (empty until a task's bridge opens there) and its install, nothing writable. It starts bound
// to no task and relays nowhere until assign() gives it one task's ports and sockets; a second assignment ends
// it. It ends when its stdin closes (the controller's end, or death) and with the controller (--die-with-parent).
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { closeSync, fstatSync, openSync, readlinkSync, rmSync } from 'node:fs';
import { relayHolderArgv } from './bwrap-argv.ts';
import { makeSocketDir } from './gateway-bridge.ts';

const START_TIMEOUT_MS = 30_000;
const INFO_FD = 3;
const STDERR_KEPT = 2048;

/** What a relay runs and mounts: the same for every task of one controller (its Node, its script). */
export interface RelayBase {
  bwrap: string;
  /** The relay's command (Node, its script), and its install dirs to mount. */
  command: string[];
  readOnly: string[];
  rootLinks: Record<string, string>;
}

export interface RelayProcess {
  child: ChildProcess;
  /** Bind-mounted read-only at SANDBOX_RUN_DIR inside: the task's bridge opens its sockets here. */
  socketDir: string;
  /** The controller's descriptors of the relay's namespaces (joinNetArgv). */
  held: { pid: number; netFd: number; userFd?: number };
  /** The namespace's init as the host sees it (the relay is its child). */
  inner: number;
  /** Binds it to one task (relay-assignment.ts): resolves once every port listens. */
  assign(line: string): Promise<void>;
  /** An unassigned relay's end: killed, its empty directory removed. */
  discard(): void;
}

export function relayBaseKey(base: RelayBase): string {
  return JSON.stringify([base.bwrap, base.command, base.readOnly, base.rootLinks]);
}

export async function startRelayProcess(base: RelayBase): Promise<RelayProcess> {
  const socketDir = makeSocketDir();
  const plan = { socketDir, readOnly: base.readOnly, rootLinks: base.rootLinks, command: [...base.command, '--spare'] };
  const argv = relayHolderArgv(base.bwrap, plan, INFO_FD);
  const child = spawn(argv[0], argv.slice(1), {
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  });
  const said = watchOutput(child);
  child.stdin?.on('error', () => undefined);
  let held: RelayProcess['held'] | undefined;
  const discard = () => {
    child.kill('SIGKILL'); // bwrap's --die-with-parent ends the relay with it
    rmSync(socketDir, { recursive: true, force: true });
    for (const fd of [held?.netFd, held?.userFd]) if (fd !== undefined) closeSync(fd);
    held = undefined;
  };
  try {
    const [info] = await Promise.all([namespaceReport(child), said('spare')]);
    held = holdNamespaces(info);
    for (const stream of [child.stdin, child.stdout, child.stderr, child.stdio[INFO_FD]])
      (stream as { unref?: () => void } | null)?.unref?.();
    child.unref(); // the controller may exit with it running: --die-with-parent ends it then
    const assign = async (line: string) => {
      child.stdin?.write(`${line}\n`); // a dead relay's EPIPE is the error handler's; said() reports its exit
      await said('ready');
    };
    return { child, socketDir, held, inner: info.pid, assign, discard };
  } catch (err) {
    discard();
    throw new Error(`spec.sandbox.network gateway: the relay did not start: ${(err as Error).message}`);
  }
}

/** waitFor(word): resolves once the relay says it (a line of its stdout), fails if it exits or times out first. */
function watchOutput(child: ChildProcess): (word: string) => Promise<void> {
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => {
    out = (out + d.toString()).slice(-64);
  });
  child.stderr?.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-STDERR_KEPT);
  });
  const lastError = () => (err.trim() ? `: ${err.trim().split('\n').pop()}` : '');
  return (word) =>
    new Promise((ready, fail) => {
      const finish = (problem?: Error) => {
        clearTimeout(timer);
        child.stdout?.removeListener('data', check);
        child.removeListener('exit', onExit);
        child.removeListener('error', finish);
        if (problem) fail(problem);
        else ready();
      };
      const check = () => out.includes(`${word}\n`) && finish();
      const onExit = (code: number | null, signal: string | null) =>
        finish(new Error(`exited ${signal ?? code}${lastError()}`));
      const timer = setTimeout(
        () => finish(new Error(`not ${word} in ${START_TIMEOUT_MS / 1000} s`)),
        START_TIMEOUT_MS,
      );
      child.stdout?.on('data', check);
      child.once('exit', onExit);
      child.once('error', finish);
      if (child.exitCode !== null || child.signalCode !== null) onExit(child.exitCode, child.signalCode);
      else check();
    });
}

/** bwrap's report on the info descriptor: the namespace's pid and its net inode. */
function namespaceReport(child: ChildProcess): Promise<{ pid: number; netInode: number }> {
  return new Promise((ready, fail) => {
    let info = '';
    child.once('exit', () => fail(new Error('no namespace reported')));
    child.stdio[INFO_FD]?.on('data', (d: Buffer) => {
      info = (info + d.toString()).slice(0, 4096);
      try {
        const j = JSON.parse(info) as { 'child-pid': number; 'net-namespace': number };
        ready({ pid: j['child-pid'], netInode: j['net-namespace'] });
      } catch {
        // not whole yet
      }
    });
  });
}

/** Descriptors of the relay's namespaces, checked against bwrap's report (a reused pid is refused). */
function holdNamespaces(info: { pid: number; netInode: number }): RelayProcess['held'] {
  const netFd = openSync(`/proc/${info.pid}/ns/net`, 'r');
  if (fstatSync(netFd).ino !== info.netInode) {
    closeSync(netFd);
    throw new Error('the relay ended before its namespace was held');
  }
  const sameUser = readlinkSync('/proc/self/ns/user') === readlinkSync(`/proc/${info.pid}/ns/user`);
  const userFd = sameUser ? undefined : openSync(`/proc/${info.pid}/ns/user`, 'r');
  return { pid: process.pid, netFd, ...(userFd === undefined ? {} : { userFd }) };
}
