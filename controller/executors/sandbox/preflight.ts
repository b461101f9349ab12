// Can this machine sandbox an episode? bubblewrap must be installed and able to make its namespaces; if not,
// the task fails to start with what to install or enable (never a silent run without the sandbox).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tailLine } from '../../api/bounds.ts';

export const BWRAP = '/usr/bin/bwrap';

/** The message for a failed probe: the package or the kernel setting, named. Pure: facts in, words out. */
export function sandboxUnavailable(facts: {
  bwrap: string;
  spawnError?: string;
  stderr?: string;
  /** /proc/sys/kernel/unprivileged_userns_clone and /proc/sys/user/max_user_namespaces, when readable. */
  unprivilegedUsernsClone?: string;
  maxUserNamespaces?: string;
  root: boolean;
}): string {
  const head = 'spec.sandbox.enabled: cannot sandbox the episode';
  if (facts.spawnError === 'ENOENT')
    return `${head}: ${facts.bwrap} not found; install the bubblewrap package (Debian/Ubuntu: apt-get install bubblewrap)`;
  if (facts.spawnError)
    return `${head}: cannot run ${facts.bwrap} (${facts.spawnError}); reinstall the bubblewrap package`;
  const settings: string[] = [];
  if (!facts.root && facts.unprivilegedUsernsClone === '0') settings.push('sysctl kernel.unprivileged_userns_clone=1');
  if (facts.maxUserNamespaces === '0') settings.push('sysctl user.max_user_namespaces=15000');
  if (!facts.root) settings.push('or kernel.apparmor_restrict_unprivileged_userns=0 where AppArmor restricts them');
  const why = tailLine((facts.stderr ?? '').trim().split('\n').pop()) ?? '';
  return `${head}: bubblewrap cannot create namespaces${why ? ` (${why})` : ''}; enable user namespaces: ${
    settings.length
      ? settings.join(', ')
      : 'check that the container or kernel allows namespaces (CLONE_NEWUSER/NEWPID/NEWNET)'
  }`;
}

const probes = new Map<string, Promise<string | undefined>>();

/** Undefined when bwrap runs here with every namespace the sandbox uses; else why not. Probed once per path. */
export function probeSandbox(bwrap = BWRAP): Promise<string | undefined> {
  let probe = probes.get(bwrap);
  if (!probe) {
    probe = runProbe(bwrap);
    probes.set(bwrap, probe);
    // A failure is probed again next time: the user may install the package while the controller runs.
    void probe.then((problem) => problem && probes.delete(bwrap));
  }
  return probe;
}

function runProbe(bwrap: string): Promise<string | undefined> {
  const args = [
    '--ro-bind',
    '/',
    '/',
    '--unshare-pid',
    '--unshare-net',
    '--unshare-ipc',
    '--die-with-parent',
    '--',
    'true',
  ];
  return new Promise((done) => {
    execFile(bwrap, args, { timeout: 10_000 }, (err, _stdout, stderr) => {
      if (!err) return done(undefined);
      const code = (err as { code?: unknown }).code;
      done(
        sandboxUnavailable({
          bwrap,
          spawnError: typeof code === 'string' ? code : undefined,
          stderr: String(stderr),
          unprivilegedUsernsClone: readSetting('/proc/sys/kernel/unprivileged_userns_clone'),
          maxUserNamespaces: readSetting('/proc/sys/user/max_user_namespaces'),
          root: process.getuid?.() === 0,
        }),
      );
    });
  });
}

function readSetting(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}
