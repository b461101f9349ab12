// A sandboxed episode's set-up (README "Sandbox"): probes bubblewrap, makes the task's $HOME, the resource
// group and (network: gateway) leases the task's relay; wraps each process of the episode (agent, verify,
// gates) in bwrap. The rules are in bwrap-argv.ts, gateway-routes.ts, install-dirs.ts and resources.ts.
import { gatewayCodexHomePath, sandboxHomePath } from '../../util/state-layout.ts';
import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, lstatSync, mkdirSync, openSync, readlinkSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ResourceLimit, Sandbox, SandboxRun } from '../../api/sandbox.ts';
import { isInside } from '../../util/paths.ts';
import { bwrapArgv } from './bwrap-argv.ts';
import { gatewayRoutes } from './gateway-routes.ts';
import { installDirs, programsOf } from './install-dirs.ts';
import { BWRAP, probeSandbox } from './preflight.ts';
import { leaseRelay, warmRelay } from './relay-holder.ts';
import type { RelayLease, RelayRequest } from './relay-holder.ts';
import { episodeGroup } from './resources.ts';
import type { EpisodeGroup } from './resources.ts';

/** The environment variables whose files the episode writes or reads outside its workspace. */
const FILE_VARIABLES = { rw: ['EPISODIC_OPS', 'EPISODIC_OUTPUTS'], ro: ['EPISODIC_PROMPT_FILE'] };
const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin';

export class SandboxError extends Error {}

export interface EpisodeSandbox {
  /** The argv and (whole) environment a process of the episode is started with. */
  wrap(argv: string[], env: Record<string, string>): { argv: string[]; env: Record<string, string> };
  /** The agent's environment as it is inside: with network gateway, its endpoints at the relay's loopback. */
  seen(env: Readonly<Record<string, string>>): Record<string, string>;
  /** A bound of spec.sandbox.resources the episode hit so far. */
  limitHit(): ResourceLimit | undefined;
  /** What the result and the record say. */
  run(): SandboxRun;
  /** After the episode: the group removed, the relay released. Refusals of the proxy, for the log. */
  close(): Promise<string[]>;
  /** network gateway: the task's relay namespace's init on the host (the relay is its child), for bench/. */
  relayPid?: number;
}

export interface SandboxRequest {
  sandbox: Sandbox;
  stateDir: string;
  namespace: string;
  name: string;
  workspace: string;
  /** spec.agent.env resolved (the gateway endpoints are read from it). */
  env: Record<string, string>;
  bwrap?: string;
}

/** The task's own $HOME: kept between its episodes, never another task's. */
export function sandboxHome(stateDir: string, namespace: string, name: string): string {
  return sandboxHomePath(stateDir, namespace, name);
}

/**
 * What a task's episodes share, started ahead of the episode beside its workspace's set-up: the probe of bwrap
 * and (network: gateway) the task's relay. prepareSandbox then finds them ready; it reports what failed here.
 */
export function warmSandbox(req: Omit<SandboxRequest, 'workspace'>): Promise<void> {
  const bwrap = req.bwrap ?? BWRAP;
  return probeSandbox(bwrap)
    .then(async (problem) => {
      const relay = problem || mountProblem(req) ? undefined : relayRequest(req, bwrap);
      if (relay) await warmRelay(relay);
    })
    .catch(() => undefined);
}

export async function prepareSandbox(req: SandboxRequest): Promise<EpisodeSandbox> {
  const bwrap = req.bwrap ?? BWRAP;
  const problem = (await probeSandbox(bwrap)) ?? mountProblem(req);
  if (problem) throw new SandboxError(problem);
  const mounts = req.sandbox.mounts;
  const home = sandboxHome(req.stateDir, req.namespace, req.name);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const network = req.sandbox.network;
  const routes = gatewayRoutes(req.env, req.sandbox.allowHosts);
  const relayReq = relayRequest(req, bwrap);
  const relay: RelayLease | undefined = relayReq ? await leaseRelay(relayReq) : undefined;
  const group: EpisodeGroup = episodeGroup(`${req.namespace}.${req.name}.${randomUUID()}`, req.sandbox.resources);
  let hit: ResourceLimit | undefined;
  const seen = (env: Readonly<Record<string, string>>) =>
    network === 'gateway' ? { ...env, ...routes.env } : { ...env };
  // The gateway's CODEX_HOME of this task (its config.toml names the relay); never a user's own ~/.codex.
  const codexHome = gatewayCodexHomePath(req.stateDir, req.namespace, req.name);
  return {
    relayPid: relay?.pid,
    seen,
    wrap(argv, env) {
      const inside = seen(env);
      const files = filesOf(inside, codexHome);
      const bins = programsOf(argv).map((p) => resolveProgram(p, inside.PATH ?? process.env.PATH ?? DEFAULT_PATH));
      const readOnly = [...installDirs(bins), ...files.ro, ...mounts.filter((m) => m.readOnly).map((m) => m.path)];
      const readWrite = [...files.rw, ...mounts.filter((m) => !m.readOnly).map((m) => m.path)];
      const binDirs = bins.filter((b) => b.named.includes('/')).map((b) => dirname(b.named));
      Object.assign(inside, { HOME: home, TMPDIR: '/tmp' });
      inside.PATH = env.PATH ?? [...new Set(binDirs), DEFAULT_PATH].join(':');
      const plan = {
        network,
        workspace: req.workspace,
        home,
        readOnly: [...new Set(readOnly)],
        readWrite: [...new Set(readWrite)],
        rootLinks: rootLinks(),
        netJoined: relay !== undefined,
        env: inside,
        command: argv,
      };
      const joinNet = relay?.prefix ?? [];
      return {
        argv: [...group.prefix, ...joinNet, ...bwrapArgv(bwrap, plan)],
        env: { PATH: process.env.PATH ?? DEFAULT_PATH },
      };
    },
    limitHit: () => {
      hit ??= group.hit();
      return hit;
    },
    run: () => ({ network, resources: group.how, ...(hit ? { limitHit: hit } : {}) }),
    async close() {
      hit ??= group.hit();
      await group.remove();
      return relay?.release() ?? [];
    },
  };
}

/** A mount that is or holds the state directory, named; else undefined. */
function mountProblem(req: Pick<SandboxRequest, 'sandbox' | 'stateDir'>): string | undefined {
  for (const [i, m] of req.sandbox.mounts.entries())
    if (isInside(m.path, req.stateDir) || isInside(req.stateDir, m.path))
      return `spec.sandbox.mounts[${i}].path: ${m.path} is or holds the state directory`;
  return undefined;
}

/** network: gateway with an endpoint or an allowHost to carry: the task's relay; else none. */
function relayRequest(req: Omit<SandboxRequest, 'workspace'>, bwrap: string): RelayRequest | undefined {
  const routes = gatewayRoutes(req.env, req.sandbox.allowHosts);
  const carried = routes.upstreams.length > 0 || routes.proxyPort !== undefined;
  if (req.sandbox.network !== 'gateway' || !carried) return undefined;
  return { task: `${req.namespace}/${req.name}`, routes, bwrap, ...relayCommand() };
}

/** The relay: this Node and its script (bundled in dist/ where built; the source otherwise), and their installs. */
function relayCommand(): { command: string[]; readOnly: string[]; rootLinks: Record<string, string> } {
  const at = (c: string) => fileURLToPath(new URL(c, import.meta.url));
  const scripts = ['../sandbox-relay.js', '../../../dist/sandbox-relay.js', './relay.ts'].map(at);
  const script = scripts.find((s) => existsSync(s)) ?? (scripts.at(-1) as string);
  const command = [process.execPath, script];
  const bins = command.map((p) => resolveProgram(p, DEFAULT_PATH));
  return { command, readOnly: installDirs(bins), rootLinks: rootLinks() };
}

/** The files named by the episode's variables, made to exist so they can be mounted; the gateway's CODEX_HOME. */
function filesOf(env: Record<string, string>, codexHome: string): { ro: string[]; rw: string[] } {
  const pick = (names: string[], create: boolean) =>
    names.flatMap((n) => {
      const file = env[n];
      if (!file) return [];
      if (create && !existsSync(file)) closeSync(openSync(file, 'a', 0o600));
      return existsSync(file) ? [file] : [];
    });
  const codex = env.CODEX_HOME === codexHome && existsSync(codexHome) ? [codexHome] : [];
  return { rw: [...pick(FILE_VARIABLES.rw, true), ...codex], ro: pick(FILE_VARIABLES.ro, false) };
}

function resolveProgram(program: string, path: string): { named: string; resolved: string } {
  const named = program.includes('/')
    ? program
    : (path
        .split(delimiter)
        .map((dir) => join(dir, program))
        .find((f) => existsSync(f)) ?? program);
  try {
    return { named, resolved: realpathSync(named) };
  } catch {
    return { named, resolved: named };
  }
}

let links: Record<string, string> | undefined;
/** /bin, /lib… that are symlinks on this host (merged /usr), read once. */
function rootLinks(): Record<string, string> {
  if (links) return links;
  const out: Record<string, string> = {};
  for (const name of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']) {
    try {
      if (lstatSync(`/${name}`).isSymbolicLink()) out[name] = readlinkSync(`/${name}`);
    } catch {
      // absent on this host
    }
  }
  links = out;
  return out;
}

const LIMIT_POLL_MS = 250;

/** Polls the group's counters while the episode runs: a bound hit ends it (stop kills the current tree). */
export function watchLimits(sandbox: EpisodeSandbox, stop: () => void): () => void {
  const timer = setInterval(() => {
    if (sandbox.limitHit()) {
      clearInterval(timer);
      stop();
    }
  }, LIMIT_POLL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** The episode's message when a bound was hit: which one, and that its processes were killed. */
export function limitMessage(hit: ResourceLimit, resources: Sandbox['resources']): string {
  const bound =
    hit === 'memory' ? `memory bound (${resources.memoryMiB} MiB)` : `process bound (${resources.pids} pids)`;
  return `sandbox: the episode hit its ${bound}; its processes were killed (ResourceLimit)`;
}
