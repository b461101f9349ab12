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
  /** Host directory of the relay's Unix sockets (network gateway), mounted at SANDBOX_RUN_DIR. */
  socketDir?: string;
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
  if (plan.network !== 'open') argv.push('--unshare-net');
  for (const dir of SYSTEM_DIRS) argv.push('--ro-bind', dir, dir);
  for (const name of ROOT_NAMES) {
    const target = plan.rootLinks[name];
    if (target !== undefined) argv.push('--symlink', target, `/${name}`);
  }
  argv.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--tmpfs', '/run');
  // Parents before children: a bind inside another (a mount inside the workspace) stays visible.
  for (const bind of binds(plan)) argv.push(bind.readOnly ? '--ro-bind' : '--bind', bind.path, bind.path);
  if (plan.socketDir !== undefined && plan.network === 'gateway')
    argv.push('--ro-bind', plan.socketDir, SANDBOX_RUN_DIR);
  // Nothing else is writable: the root the binds hang from is read-only once they are in place.
  argv.push('--remount-ro', '/');
  argv.push('--chdir', plan.workspace, '--clearenv');
  for (const [name, value] of Object.entries(plan.env).sort(([a], [b]) => (a < b ? -1 : 1)))
    argv.push('--setenv', name, value);
  argv.push('--', ...plan.command);
  return argv;
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
