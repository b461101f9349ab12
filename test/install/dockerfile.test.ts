// The Dockerfile, verified without a Docker engine: this test reads the Dockerfile and replays its steps
// into temporary directories, one per stage, with the same build context (.dockerignore applied to the
// working tree, as `docker build` does), the same npm flags, the same paths and the same entrypoint. Then
// it runs `episodic --version` and a real episode (`episodic episode -- <stand-in agent>`, as an episode
// pod runs it) from the runtime layout.
//
// What cannot run here is what needs root or the base image: apt-get, groupadd/useradd and USER. Those
// are matched against a short allow-list, so a new kind of RUN step fails this test until someone
// decides how to verify it. npm ci uses the local npm cache (--prefer-offline via the environment).
import { CLI_HANG_GUARD_MS, hangGuardMessage, SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readFile, readdir, readlink, realpath, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { buildEpisodePod } from '../../controller/executors/cluster/episode-pod.ts';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import type { AgentTask } from '../../controller/api/agent-task.ts';
import { EpisodeResultSchema } from '../../controller/api/episode-result.ts';
import { isIgnored, parseDockerfile, parseDockerignore, replay } from './dockerfile-replay.ts';
import type { Replay } from './dockerfile-replay.ts';

const execFileAsync = promisify(execFile);
const repoRoot = path.resolve(import.meta.dirname, '..', '..');

/** Every path of a tree, relative, with its type. */
async function tree(root: string, dir = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(path.join(root, dir), { withFileTypes: true })) {
    const rel = dir ? `${dir}/${entry.name}` : entry.name;
    out.push(rel);
    if (entry.isDirectory()) out.push(...(await tree(root, rel)));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------

describe('Dockerfile replayed without a Docker engine', { timeout: SUITE_HANG_GUARD_MS }, () => {
  let work: string;
  let result: Replay;
  let runtimeEnv: NodeJS.ProcessEnv;
  let entrypoint: string;
  let pkg: { version: string; dependencies: Record<string, string>; devDependencies: Record<string, string> };

  before(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'episodic-docker-'));
    // `node` on PATH is the project's Node 24 (the image's base is node:24): npm, tsc and the
    // #!/usr/bin/env node shebang of the entrypoint all pick it up, as they would in the image.
    const nodeDir = path.join(work, 'node-bin');
    await mkdir(nodeDir);
    await symlink(await realpath(path.join(repoRoot, 'node_modules', '.bin', 'node')), path.join(nodeDir, 'node'));
    result = await replay(work, nodeDir);
    pkg = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8'));
    // The image's PATH: /usr/local/bin (where the entrypoint link is) before the rest.
    runtimeEnv = {
      PATH: `${path.join(result.final.root, 'usr', 'local', 'bin')}:${nodeDir}:/usr/bin:/bin`,
      LANG: 'C.UTF-8',
      ...result.final.env,
    };
    assert.ok(result.final.entrypoint);
    entrypoint = path.join(result.final.root, 'usr', 'local', 'bin', result.final.entrypoint[0]);
  });

  after(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('sends a minimal build context (.dockerignore)', () => {
    const top = new Set(result.context.map((f) => f.split('/')[0]));
    assert.deepEqual([...top].sort(), ['bin', 'controller', 'package-lock.json', 'package.json', 'scripts']);
    assert.ok(result.context.includes('controller/cli/main.ts'));
    for (const f of result.context) assert.doesNotMatch(f, /(^|\/)(node_modules|dist|\.cluster|\.git|test)(\/|$)/);
  });

  it('has a Node 24 build stage and a runtime stage that uses the same base', () => {
    assert.deepEqual(
      result.stages.map((s) => s.name),
      ['build', 'runtime'],
    );
    for (const s of result.stages) assert.match(s.base, /^node:24[.-]/);
    assert.deepEqual(result.stages[0].ran, ['npm ci --ignore-scripts --no-audit --no-fund', 'npm run build']);
    assert.ok(result.final.ran.includes('npm ci --omit=dev --ignore-scripts --no-audit --no-fund'));
  });

  it('installs git in the runtime stage and runs as uid 65532', () => {
    const install = result.final.skipped.find((s) => s.startsWith('apt-get install'));
    assert.ok(install, 'the runtime stage installs system packages');
    assert.match(install, /\bgit\b/);
    assert.equal(result.final.user, '65532:65532');
    assert.deepEqual(result.final.entrypoint, ['episodic']);
  });

  it('ships compiled output and production dependencies only', async () => {
    const app = path.join(result.final.root, 'app');
    assert.deepEqual((await readdir(app)).sort(), ['bin', 'dist', 'node_modules', 'package-lock.json', 'package.json']);
    const files = await tree(app);
    assert.ok(files.includes('dist/cli/main.js'));
    assert.ok(
      !files.some((f) => f.startsWith('dist/') && f.endsWith('.ts') && !f.endsWith('.d.ts')),
      'no TypeScript sources in dist',
    );
    const modules = await readdir(path.join(app, 'node_modules'));
    for (const dev of Object.keys(pkg.devDependencies))
      assert.ok(!modules.includes(dev), `devDependency ${dev} is in the image`);
    for (const dep of Object.keys(pkg.dependencies)) {
      const scoped = dep.split('/');
      assert.ok(modules.includes(scoped[0]), `dependency ${dep} is missing`);
    }
    assert.ok(!modules.includes('typescript'));
  });

  it('leaves everything readable (and the entrypoint executable) for a non-owner uid', async () => {
    // COPY makes files root-owned with their context modes; uid 65532 is "other" for all of them.
    const app = path.join(result.final.root, 'app');
    for (const rel of await tree(app, 'dist').then((d) => ['bin', 'bin/episodic.js', 'package.json', 'dist', ...d])) {
      const info = await lstat(path.join(app, rel));
      if (info.isSymbolicLink()) continue;
      assert.ok(info.mode & 0o004, `${rel} is not world-readable`);
      if (info.isDirectory()) assert.ok(info.mode & 0o001, `${rel} is not world-searchable`);
    }
    assert.ok((await stat(path.join(app, 'bin', 'episodic.js'))).mode & 0o001, 'bin/episodic.js is not executable');
    assert.equal(
      await readlink(entrypoint).then((l) => path.resolve(path.dirname(entrypoint), l)),
      path.join(app, 'bin', 'episodic.js'),
    );
  });

  it('`episodic --version` works through the entrypoint and node_modules/.bin/episodic', async () => {
    const { stdout } = await execFileAsync(entrypoint, ['--version'], {
      env: runtimeEnv,
      cwd: path.join(result.final.root, 'app'),
    });
    assert.equal(stdout.trim(), pkg.version);
    // The README's one invocation, from the image's working directory as from a checkout.
    const app = path.join(result.final.root, 'app');
    const viaModules = await execFileAsync(path.join(app, 'node_modules/.bin/episodic'), ['--version'], {
      env: runtimeEnv,
      cwd: app,
    });
    assert.equal(viaModules.stdout.trim(), pkg.version);
  });

  it('runs an episode as an episode pod does: `episodic episode -- <agent>`', async () => {
    const task = {
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTask',
      metadata: { name: 'docker-smoke', namespace: 'default', uid: '00000000-0000-0000-0000-000000000001' },
      spec: AgentTaskSpecSchema.parse({
        prompt: 'Say <promise>COMPLETE</promise>.',
        agent: {
          image: 'episodic/agent-claude-code:0.1.0',
          command: [
            'node',
            path.join(repoRoot, 'test', 'agents', 'fake-claude.mjs'),
            '-p',
            '--output-format',
            'stream-json',
            '--verbose',
          ],
          output: 'claude',
        },
      }),
    } as AgentTask;
    const pod = buildEpisodePod({ task, spec: task.spec, episode: 1 });
    const container: any = pod.spec.containers[0];
    assert.equal(container.command[0], 'episodic');
    assert.equal(container.command[1], 'episode');
    const workspace = path.join(work, 'workspace');
    const home = path.join(work, 'home');
    await mkdir(workspace);
    await mkdir(home);
    const env: NodeJS.ProcessEnv = { ...runtimeEnv };
    for (const e of container.env) if (typeof e.value === 'string') env[e.name] = e.value;
    env.HOME = home; // the pod's emptyDir
    const config = JSON.parse(env.EPISODIC_EPISODE_CONFIG as string);
    env.EPISODIC_EPISODE_CONFIG = JSON.stringify({ ...config, workspaceDir: workspace });
    env.FAKE_AGENT_MODE = 'success';
    const resultFile = path.join(work, 'termination-log');
    // The pod's command, with `episodic` resolved on the image's PATH; only the termination-log path moves.
    const [, sub, ...rest] = container.command as string[];
    const { stdout } = await execFileAsync(entrypoint, [sub, '--result-file', resultFile, ...rest], {
      env,
      cwd: workspace,
      timeout: CLI_HANG_GUARD_MS,
    }).catch((err: { killed?: boolean }) => {
      // One fake-agent episode: only a hang reaches the guard, and it says so.
      throw err.killed ? new Error(hangGuardMessage('the pod command', CLI_HANG_GUARD_MS), { cause: err }) : err;
    });
    assert.ok(stdout.length > 0, 'the agent output is passed through to the pod log');
    const message = JSON.parse(await readFile(resultFile, 'utf8'));
    const parsed = EpisodeResultSchema.safeParse(message);
    assert.ok(parsed.success, `termination message is an EpisodeResult: ${JSON.stringify(message)}`);
    assert.equal(parsed.data.exitCode, 0, JSON.stringify(message));
    assert.equal(parsed.data.format, 'claude');
    assert.equal(parsed.data.completion, 'promise');
    assert.ok(parsed.data.costUSD > 0, 'cost was read from the agent output');
  });

  it('agent images build FROM the episodic image and stay non-root', async () => {
    for (const [dir, pkgName, bin] of [
      ['claude-code', '@anthropic-ai/claude-code', 'claude'],
      ['codex', '@openai/codex', 'codex'],
      ['gemini', '@google/gemini-cli', 'gemini'],
    ]) {
      const text = await readFile(path.join(repoRoot, 'images', dir, 'Dockerfile'), 'utf8');
      const steps = parseDockerfile(text);
      const from = steps.filter((s) => s.op === 'FROM');
      assert.equal(from.length, 1, `${dir}: one stage`);
      assert.equal(from[0].args, '${EPISODIC_IMAGE}');
      assert.match(text, new RegExp(`ARG EPISODIC_IMAGE=episodic/episodic:${pkg.version.replaceAll('.', '\\.')}\\n`));
      assert.match(text, new RegExp(`npm install --global [^\\n]*"${pkgName}@\\$\\{\\w+\\}"`));
      assert.match(text, new RegExp(`&& ${bin} --version`));
      const users = steps.filter((s) => s.op === 'USER').map((s) => s.args);
      assert.equal(users.at(-1), '65532:65532', `${dir}: ends as the non-root user`);
      assert.ok(!steps.some((s) => s.op === 'ENTRYPOINT' || s.op === 'CMD'), `${dir}: keeps the episodic entrypoint`);
    }
  });
});

// Keep the helpers honest: the .dockerignore matcher against Docker's documented semantics.
describe('.dockerignore matcher', () => {
  it('follows Docker: last match wins, parents match children, * stays in a segment', () => {
    const rules = parseDockerignore('*\n!bin\n!controller\ncontroller/**/*.test.ts\n**/.DS_Store\n');
    assert.equal(isIgnored(rules, 'node_modules/x/index.js'), true);
    assert.equal(isIgnored(rules, 'bin/episodic.js'), false);
    assert.equal(isIgnored(rules, 'controller/cli/main.ts'), false);
    assert.equal(isIgnored(rules, 'controller/cli/main.test.ts'), true);
    assert.equal(isIgnored(rules, 'controller/a/.DS_Store'), true);
    assert.equal(isIgnored(rules, 'README.md'), true);
  });
});
