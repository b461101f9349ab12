// The Dockerfile replayed without a Docker engine (see dockerfile.test.ts): parsing, the .dockerignore
// build context, and each stage replayed into its own directory. Stages run concurrently, as BuildKit
// builds them; a COPY --from waits for the stage it copies from.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdir, readFile, readdir, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { CLI_HANG_GUARD_MS, hangGuardMessage } from '../support/hang-guard.ts';

const execFileAsync = promisify(execFile);
const repoRoot = path.resolve(import.meta.dirname, '..', '..');

export interface Instruction {
  op: string;
  args: string;
  line: number;
}

export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i];
    if (/^\s*(#|$)/.test(line)) continue;
    while (/\\\s*$/.test(line) && i + 1 < lines.length) {
      i++;
      if (/^\s*#/.test(lines[i])) continue; // comments inside a continuation are dropped, as Docker does
      line = line.replace(/\\\s*$/, ' ') + lines[i].trim();
    }
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    assert.ok(m, `Dockerfile line ${start + 1}: cannot parse "${line}"`);
    out.push({ op: m[1].toUpperCase(), args: m[2].trim(), line: start + 1 });
  }
  return out;
}

function jsonForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  return JSON.parse(args) as string[];
}

// ---------------------------------------------------------------------------------------------------
// .dockerignore (Docker's rules: last matching pattern wins; a pattern also matches everything below a
// directory it matches; `*` stays within one path segment, `**` spans any number)
// ---------------------------------------------------------------------------------------------------

export interface IgnoreRule {
  negate: boolean;
  re: RegExp;
  pattern: string;
}

export function parseDockerignore(text: string): IgnoreRule[] {
  const rules: IgnoreRule[] = [];
  for (const raw of text.split('\n')) {
    let line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    if (negate) line = line.slice(1).trim();
    line = path.posix.normalize(line).replace(/^\/+/, '').replace(/\/+$/, '');
    let re = '';
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if (c === '*' && line[i + 1] === '*') {
        re += '.*';
        i++;
        if (line[i + 1] === '/') i++;
      } else if (c === '*') re += '[^/]*';
      else if (c === '?') re += '[^/]';
      else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
    rules.push({ negate, re: new RegExp(`^${re}(/.*)?$`), pattern: line });
  }
  return rules;
}

export function isIgnored(rules: IgnoreRule[], rel: string): boolean {
  let ignored = false;
  for (const rule of rules) if (rule.re.test(rel)) ignored = !rule.negate;
  return ignored;
}

/** The build context `docker build .` would send: every file of the working tree minus .dockerignore. */
async function buildContext(rules: IgnoreRule[]): Promise<string[]> {
  const files: string[] = [];
  const negations = rules.filter((r) => r.negate).map((r) => r.pattern);
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(path.join(repoRoot, dir), { withFileTypes: true })) {
      const rel = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        // Skip an ignored directory unless a negation could re-include something below it (Docker walks
        // it in that case, and so do we).
        if (isIgnored(rules, rel) && !negations.some((n) => n.startsWith(`${rel}/`) || n.includes('*'))) continue;
        await walk(rel);
      } else if (!isIgnored(rules, rel)) {
        files.push(rel);
      }
    }
  };
  await walk('');
  return files.sort();
}

// ---------------------------------------------------------------------------------------------------
// Replaying the stages
// ---------------------------------------------------------------------------------------------------

/** RUN steps that need root or the base image; they are checked for, not run. */
const SYSTEM_STEPS: RegExp[] = [
  /^apt-get update$/,
  /^apt-get install -y --no-install-recommends [a-z0-9 .+-]+$/,
  /^rm -rf \/var\/lib\/apt\/lists\/\*$/,
  /^groupadd --gid 65532 \w+$/,
  /^useradd --uid 65532 --gid 65532 .+$/,
  // Empties the image's npm cache; here it would empty the developer's.
  /^npm cache clean --force$/,
];

export interface Stage {
  name: string;
  base: string;
  root: string;
  workdir: string;
  env: Record<string, string>;
  user?: string;
  entrypoint?: string[];
  cmd?: string[];
  skipped: string[];
  ran: string[];
}

export interface Replay {
  stages: Stage[];
  context: string[];
  final: Stage;
}

/** Replays every stage of the Dockerfile into `work`; `nodeDir` holds the `node` the base image would have. */
export async function replay(work: string, nodeDir: string): Promise<Replay> {
  const dockerfile = parseDockerfile(await readFile(path.join(repoRoot, 'Dockerfile'), 'utf8'));
  const rules = parseDockerignore(await readFile(path.join(repoRoot, '.dockerignore'), 'utf8'));
  const context = await buildContext(rules);
  const contextDir = path.join(work, 'context');
  for (const file of context) {
    await mkdir(path.dirname(path.join(contextDir, file)), { recursive: true });
    await cp(path.join(repoRoot, file), path.join(contextDir, file), { preserveTimestamps: true });
  }
  const globalArgs: Record<string, string> = {};
  const groups: Array<{ from: Instruction; body: Instruction[] }> = [];
  for (const ins of dockerfile) {
    if (ins.op === 'FROM') groups.push({ from: ins, body: [] });
    else if (groups.length > 0) groups.at(-1)?.body.push(ins);
    else {
      assert.equal(ins.op, 'ARG', `Dockerfile:${ins.line} ${ins.op}: only ARG may come before the first FROM`);
      setArg(globalArgs, ins.args, (v) => expandVars(v, globalArgs, {}));
    }
  }
  assert.ok(groups.length > 0, 'no FROM in the Dockerfile');
  const stages = groups.map((g, i) => newStage(g.from, i, work, globalArgs));
  const done = new Map<string, Promise<void>>();
  const run: Run = { contextDir, nodeDir, stages, done };
  for (const [i, g] of groups.entries())
    done.set(stages[i].name, replayStage(stages[i], g.body, { ...globalArgs }, run));
  await Promise.all(done.values());
  return { stages, context, final: stages[stages.length - 1] };
}

interface Run {
  contextDir: string;
  nodeDir: string;
  stages: Stage[];
  /** Each stage's completion, by name: what a COPY --from waits for. */
  done: Map<string, Promise<void>>;
}

function expandVars(s: string, args: Record<string, string>, env: Record<string, string>): string {
  return s.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a, b) => args[a ?? b] ?? env[a ?? b] ?? '');
}

function setArg(args: Record<string, string>, text: string, expand: (v: string) => string): void {
  const [name, value] = text.split('=', 2);
  args[name] = args[name] ?? expand(value ?? '');
}

function newStage(from: Instruction, index: number, work: string, args: Record<string, string>): Stage {
  const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(from.args);
  assert.ok(m, `Dockerfile:${from.line} FROM`);
  const name = m[2] ?? String(index);
  const base = expandVars(m[1], args, {});
  return { name, base, root: path.join(work, `stage-${name}`), workdir: '/', env: {}, skipped: [], ran: [] };
}

async function replayStage(stage: Stage, body: Instruction[], args: Record<string, string>, run: Run): Promise<void> {
  await mkdir(stage.root, { recursive: true });
  const expand = (s: string) => expandVars(s, args, stage.env);
  for (const ins of body) {
    const where = `Dockerfile:${ins.line} ${ins.op}`;
    switch (ins.op) {
      case 'ARG':
        setArg(args, ins.args, expand);
        break;
      case 'WORKDIR':
        stage.workdir = path.posix.resolve(stage.workdir, expand(ins.args));
        await mkdir(inRoot(stage, '.'), { recursive: true });
        break;
      case 'ENV': {
        const m = /^(\w+)=(.*)$/.exec(ins.args);
        assert.ok(m, `${where}: only ENV NAME=value is supported here`);
        stage.env[m[1]] = expand(m[2]);
        break;
      }
      case 'COPY':
        await copy(stage, ins.args, where, run);
        break;
      case 'RUN':
        for (const step of expand(ins.args).split(/\s*&&\s*/)) await runStep(stage, step, where, run.nodeDir);
        break;
      case 'USER':
        stage.user = ins.args;
        break;
      case 'ENTRYPOINT':
        stage.entrypoint = jsonForm(ins.args);
        assert.ok(stage.entrypoint, `${where}: use the exec (JSON) form`);
        break;
      case 'CMD':
        stage.cmd = jsonForm(ins.args);
        break;
      default:
        assert.fail(`${where}: instruction not understood by this test`);
    }
  }
}

function inRoot(st: Stage, p: string): string {
  return path.join(st.root, path.posix.resolve(st.workdir, p));
}

async function copy(stage: Stage, text: string, where: string, run: Run): Promise<void> {
  const words = text.split(/\s+/);
  let from: Stage | undefined;
  while (words[0].startsWith('--')) {
    const flag = words.shift() as string;
    const m = /^--from=(\S+)$/.exec(flag);
    assert.ok(m, `${where}: unsupported flag ${flag}`);
    from = run.stages.find((s) => s.name === m[1] && s !== stage);
    assert.ok(from, `${where}: no stage ${m[1]}`);
    const fromIndex = run.stages.indexOf(from);
    assert.ok(fromIndex < run.stages.indexOf(stage), `${where}: stage ${m[1]} comes later`);
    await run.done.get(from.name);
  }
  const dest = words.pop() as string;
  for (const src of words) {
    const source = from ? path.join(from.root, path.posix.resolve(from.workdir, src)) : path.join(run.contextDir, src);
    const info = await stat(source).catch(() => undefined);
    assert.ok(info, `${where}: ${src} is not in the ${from ? `stage ${from.name}` : 'build context (.dockerignore?)'}`);
    const target =
      dest.endsWith('/') && !info.isDirectory()
        ? path.join(inRoot(stage, dest), path.basename(src))
        : inRoot(stage, dest);
    await mkdir(path.dirname(target), { recursive: true });
    await cp(source, target, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
  }
}

async function runStep(stage: Stage, step: string, where: string, nodeDir: string): Promise<void> {
  if (SYSTEM_STEPS.some((re) => re.test(step))) {
    stage.skipped.push(step);
  } else if (/^npm( |$)/.test(step)) {
    await execFileAsync('bash', ['-c', step], {
      cwd: inRoot(stage, '.'),
      env: {
        ...process.env,
        ...stage.env,
        PATH: `${nodeDir}:${process.env.PATH}`,
        npm_config_prefer_offline: 'true',
        npm_config_update_notifier: 'false',
      },
      timeout: CLI_HANG_GUARD_MS,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((err: { killed?: boolean }) => {
      // npm ci and the build are bounded work: only a hang reaches the guard, and it says so.
      throw err.killed ? new Error(hangGuardMessage(`${where}: ${step}`, CLI_HANG_GUARD_MS), { cause: err }) : err;
    });
    stage.ran.push(step);
  } else {
    const ln = /^ln -s (\/\S+) (\/\S+)$/.exec(step);
    assert.ok(ln, `${where}: "${step}" is neither npm, ln -s nor a known system step; teach this test about it`);
    const link = path.join(stage.root, ln[2]);
    await mkdir(path.dirname(link), { recursive: true });
    // Relative, so the link resolves inside the replayed root like the absolute one does in the image.
    await symlink(path.relative(path.dirname(link), path.join(stage.root, ln[1])), link);
    stage.ran.push(step);
  }
}
