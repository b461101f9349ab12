// The bubblewrap argv of a sandboxed episode: a pure function of the plan, so every rule of README "Sandbox"
// (what is mounted, how, which namespaces, which environment) is one table-tested place.
import type { SandboxNetwork } from '../../api/sandbox.ts';

/** Where the relay's sockets appear inside the sandbox. */
export const SANDBOX_RUN_DIR = '/run/episodic';

export interface SandboxPlan {
  network: SandboxNetwork;
  /** The workspace: read-write at its own path, the working directory. */
  workspace: string;
  /** The task's own $HOME (under the state directory): read-write at its own path. */
  home: string;
  /** Read-only at their own paths: the agent CLI's install, declared read-only mounts, the prompt file. */
  readOnly: string[];
  /** Read-write at their own paths: declared read-write mounts, the ops and outputs files. */
  readWrite: string[];
  /** Top-level names that are symlinks on the host (/bin → usr/bin on merged-/usr systems), with their targets. */
  rootLinks: Record<string, string>;
  /** network gateway: the task's relay namespace is entered before bwrap (relay-holder.ts), so none is made here. */
  netJoined?: boolean;
  /** The whole environment inside: nothing of the controller's is inherited. */
  env: Record<string, string>;
  /** What runs inside (the relay and the agent after it, or the agent). */
  command: string[];
}

const SYSTEM_DIRS = ['/usr', '/etc'];
const ROOT_NAMES = ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];

export function bwrapArgv(bwrap: string, plan: SandboxPlan): string[] {
  const argv = [bwrap, '--die-with-parent', '--new-session', '--unshare-pid', '--unshare-ipc', '--unshare-uts'];
  argv.push('--unshare-cgroup-try');
  if (plan.network === 'none' || (plan.network === 'gateway' && !plan.netJoined)) argv.push('--unshare-net');
  argv.push(...systemRoot(plan.rootLinks));
  // Parents before children: a bind inside another (a mount inside the workspace) stays visible.
  for (const bind of binds(plan)) argv.push(bind.readOnly ? '--ro-bind' : '--bind', bind.path, bind.path);
  // Nothing else is writable: the root the binds hang from is read-only once they are in place.
  argv.push('--remount-ro', '/');
  argv.push('--chdir', plan.workspace, '--clearenv');
  for (const [name, value] of Object.entries(plan.env).sort(([a], [b]) => (a < b ? -1 : 1)))
    argv.push('--setenv', name, value);
  argv.push('--', ...plan.command);
  return argv;
}

/** What every sandbox sees of the host: /usr and /etc read-only, the root links, its own /proc (/dev) /tmp /run. */
function systemRoot(rootLinks: Record<string, string>, dev = true): string[] {
  const argv: string[] = [];
  for (const dir of SYSTEM_DIRS) argv.push('--ro-bind', dir, dir);
  for (const name of ROOT_NAMES) {
    const target = rootLinks[name];
    if (target !== undefined) argv.push('--symlink', target, `/${name}`);
  }
  argv.push('--proc', '/proc', ...(dev ? ['--dev', '/dev'] : []), '--tmpfs', '/tmp', '--tmpfs', '/run');
  return argv;
}

export interface RelayPlan {
  /** The controller's Unix sockets (gateway-bridge.ts), read-only at SANDBOX_RUN_DIR. */
  socketDir: string;
  /** The relay's install (Node and its script), read-only. */
  readOnly: string[];
  rootLinks: Record<string, string>;
  /** Node, the relay's script and its --listen pairs. */
  command: string[];
}

/**
 * The task's relay holder: a network namespace of its own with only the relay in it, its sockets and its
 * install; bwrap reports the namespace's pid on `infoFd`. No workspace, no $HOME, nothing writable. No /dev:
 * unprivileged, `--dev` makes bwrap nest a second user namespace, and the reported pid's would not own the
 * network namespace (an episode could not enter it); Node needs no device to relay.
 */
export function relayHolderArgv(bwrap: string, plan: RelayPlan, infoFd: number): string[] {
  const argv = [bwrap, '--die-with-parent', '--new-session', '--unshare-pid', '--unshare-ipc', '--unshare-uts'];
  argv.push('--unshare-cgroup-try', '--unshare-net', '--info-fd', String(infoFd));
  argv.push(...systemRoot(plan.rootLinks, false));
  for (const dir of plan.readOnly) argv.push('--ro-bind', dir, dir);
  argv.push('--ro-bind', plan.socketDir, SANDBOX_RUN_DIR, '--remount-ro', '/', '--chdir', '/', '--clearenv');
  argv.push('--setenv', 'PATH', '/usr/bin:/bin', '--', ...plan.command);
  return argv;
}

/**
 * The prefix that puts a process into the relay's network namespace, named by the controller's own open
 * descriptors (so a dead relay's pid reused by another process can never be entered). The user namespace
 * too where bwrap made one (an unprivileged controller): setns to a network namespace needs its owner's.
 */
export function joinNetArgv(nsenter: string, held: { pid: number; netFd: number; userFd?: number }): string[] {
  const fd = (n: number) => `/proc/${held.pid}/fd/${n}`;
  const user = held.userFd === undefined ? [] : [`--user=${fd(held.userFd)}`, '--preserve-credentials'];
  return [nsenter, ...user, `--net=${fd(held.netFd)}`, '--'];
}

function binds(plan: SandboxPlan): Array<{ path: string; readOnly: boolean }> {
  const all = [
    ...plan.readOnly.map((path) => ({ path, readOnly: true })),
    ...plan.readWrite.map((path) => ({ path, readOnly: false })),
    { path: plan.home, readOnly: false },
    { path: plan.workspace, readOnly: false },
  ];
  const depth = (path: string) => path.split('/').filter(Boolean).length;
  return all.sort((a, b) => depth(a.path) - depth(b.path));
}
