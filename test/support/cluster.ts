// Test helper for the real kube-apiserver + etcd control plane started by
// scripts/cluster/up.sh (see docs/cluster-for-tests.md).
//
//   const cluster = await ensureCluster();
//   await kubectl(['get', 'ns']);
//
// ensureCluster() is idempotent and safe to call from several test files in
// parallel: up.sh takes a file lock and returns at once when the cluster is
// already healthy. The first call on a fresh machine builds kube-apiserver
// from source (tens of minutes); later calls take well under a second.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cliEntry } from './cli-entry.ts';
import { CLI_HANG_GUARD_MS, hangGuardMessage } from './hang-guard.ts';

const execFileAsync = promisify(execFile);

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const clusterDir = path.join(repoRoot, '.cluster');
export const kubeconfigPath = path.join(clusterDir, 'kubeconfig');
export const kubectlPath = path.join(clusterDir, 'bin', 'kubectl');
export const helmPath = path.join(clusterDir, 'bin', 'helm');
/** `skip` for suites that need the control plane: a developer's opt-out (CI never sets it). */
export const skipCluster = process.env.EPISODIC_SKIP_CLUSTER === '1' ? 'EPISODIC_SKIP_CLUSTER=1' : false;

export interface Cluster {
  kubeconfigPath: string;
  kubectl: string;
  helm: string;
  /** e.g. https://127.0.0.1:23456 */
  server: string;
  /** The pinned kube-apiserver release, e.g. v1.36.3 */
  kubeVersion: string;
}

export interface ExecOptions {
  /** stdin for the command (e.g. a manifest for `apply -f -`). */
  input?: string;
  /** Milliseconds; default 60s. */
  timeout?: number;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

let pending: Promise<Cluster> | undefined;

/** Start the control plane if needed (idempotent) and return its paths. */
export function ensureCluster(): Promise<Cluster> {
  // Memoize per process; a failed attempt is not cached so it can be retried.
  pending ??= startCluster().catch((err: unknown) => {
    pending = undefined;
    throw err;
  });
  return pending;
}

async function startCluster(): Promise<Cluster> {
  await run('bash', [path.join(repoRoot, 'scripts', 'cluster', 'up.sh')], {
    // A cold build of kube-apiserver can take a long time on small CI boxes.
    timeout: 90 * 60_000,
  });
  const state = parseEnvFile(await readFile(path.join(clusterDir, 'cluster.env'), 'utf8'));
  return {
    kubeconfigPath,
    kubectl: kubectlPath,
    helm: helmPath,
    server: state.APISERVER_URL ?? '',
    kubeVersion: state.KUBE_VERSION ?? '',
  };
}

/** Run the real kubectl against the test cluster; resolves to stdout. */
export async function kubectl(args: string[], opts: ExecOptions = {}): Promise<string> {
  return run(kubectlPath, ['--kubeconfig', kubeconfigPath, ...args], opts);
}

/** Run the real helm (v4) against the test cluster; resolves to stdout. */
export async function helm(args: string[], opts: ExecOptions = {}): Promise<string> {
  return run(helmPath, ['--kubeconfig', kubeconfigPath, ...args], opts);
}

/** execFile that resolves to stdout and rejects with stderr in the message. */
export async function run(file: string, args: string[], opts: ExecOptions = {}): Promise<string> {
  const child = execFileAsync(file, args, {
    cwd: opts.cwd ?? repoRoot,
    env: opts.env ?? process.env,
    timeout: opts.timeout ?? 60_000,
    maxBuffer: 64 * 1024 * 1024,
    encoding: 'utf8',
  });
  // Always close stdin so a command never waits on it; feed input if given.
  child.child.stdin?.end(opts.input ?? '');
  try {
    const { stdout } = await child;
    return stdout;
  } catch (err) {
    const e = err as Error & { stderr?: string; code?: number | string; signal?: string };
    const detail = (e.stderr ?? '').trim() || e.message;
    throw new Error(`${path.basename(file)} ${args.join(' ')} failed (exit ${e.code ?? e.signal ?? '?'}): ${detail}`, {
      cause: err,
    });
  }
}

function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) out[m[1]] = m[2];
  }
  return out;
}

/** `episodic ARGS` (bin/episodic.js on dist/), as a person at a terminal would; never throws. */
export function runMain(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [cliEntry(), ...args], { timeout: CLI_HANG_GUARD_MS }, (err, stdout, stderr) => {
      const guard = (err as { killed?: boolean } | null)?.killed;
      const said = guard ? `${stderr}\n${hangGuardMessage(`episodic ${args.join(' ')}`, CLI_HANG_GUARD_MS)}\n` : stderr;
      done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr: said });
    });
  });
}
