// `episodic validate` finds what `run` would find only when an episode starts (issue 12, item 4): escaping
// workspaces and prompt files, a task depending on itself or in a cycle, duplicate names across the files
// given; a dependency on a task that is not there is a warning (it may still be added), not an error; agent
// and gate commands that will not start here are warnings naming their field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readStatus, runCli, taskYaml, tempDir } from '../support/local.ts';

function write(dir: string, file: string, ...docs: Array<{ name: string; spec?: Record<string, unknown> }>): string {
  writeFileSync(join(dir, file), docs.map((d) => taskYaml(d)).join('\n---\n'));
  return join(dir, file);
}

test('validate DIR and validate FILE... report the same cross-file problems, each naming file, task and field', async () => {
  const dir = tempDir();
  write(
    dir,
    'escape.yaml',
    { name: 'out', spec: { workspace: '../elsewhere' } },
    { name: 'prompt', spec: { prompt: undefined, promptFile: '../../etc/passwd' } },
  );
  write(
    dir,
    'deps.yaml',
    { name: 'self', spec: { dependsOn: ['self'] } },
    { name: 'x', spec: { dependsOn: ['y'] } },
    { name: 'y', spec: { dependsOn: ['x'] } },
  );
  write(dir, 'later.yaml', { name: 'waits', spec: { dependsOn: ['not-written-yet'] } });
  write(dir, 'dup.yaml', { name: 'x' });
  const files = ['deps.yaml', 'dup.yaml', 'escape.yaml', 'later.yaml'].map((f) => join(dir, f));
  for (const args of [[dir], files]) {
    const res = await runCli(['validate', ...args]);
    assert.equal(res.code, 2, res.stderr);
    const lines = res.stderr.trim().split('\n');
    const has = (re: RegExp) =>
      assert.ok(
        lines.some((l) => re.test(l)),
        `${re} not in:\n${res.stderr}`,
      );
    has(/escape\.yaml: AgentTask default\/out: spec\.workspace: resolves outside the spec directory/);
    has(/escape\.yaml: AgentTask default\/prompt: spec\.promptFile: must be a path inside the workspace/);
    has(/deps\.yaml: AgentTask default\/self: spec\.dependsOn: names the task itself/);
    has(/deps\.yaml: AgentTask default\/x: spec\.dependsOn: a cycle x → y → x/);
    has(/dup\.yaml: AgentTask default\/x is already defined in .*deps\.yaml/);
    has(/^warning: .*later\.yaml: AgentTask default\/waits: spec\.dependsOn: no task default\/not-written-yet here/);
  }
});

test('a dependency that is not there alone is only a warning: exit 0', async () => {
  const dir = tempDir();
  write(dir, 'a.yaml', { name: 'a', spec: { dependsOn: ['b'] } });
  const res = await runCli(['validate', dir]);
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stderr, /^warning: .*spec\.dependsOn: no task default\/b here; the task waits until one appears$/m);
  assert.match(res.stdout, /^1 AgentTask valid/);
});

test('a workspace that exists as a symlink out of DIR is an error in validate, and run refuses it before any episode', async () => {
  const dir = tempDir();
  const outside = tempDir();
  mkdirSync(join(dir, 'ws'));
  symlinkSync(outside, join(dir, 'ws', 'linked'));
  write(dir, 'a.yaml', { name: 'linked', spec: { workspace: 'ws/linked' } });
  const res = await runCli(['validate', dir]);
  assert.equal(res.code, 2);
  assert.match(
    res.stderr,
    /AgentTask default\/linked: spec\.workspace: leads outside the spec directory through a symlink/,
  );
});

test('a workspace not made yet below a symlink out of DIR, or below a file, is an error in validate, and run refuses it before any episode', async () => {
  const dir = tempDir();
  const outside = tempDir();
  symlinkSync(outside, join(dir, 'link'));
  writeFileSync(join(dir, 'afile'), 'not a directory');
  write(
    dir,
    'a.yaml',
    { name: 'via-link', spec: { workspace: 'link/sub/deeper' } },
    { name: 'via-file', spec: { workspace: 'afile/sub' } },
  );
  const res = await runCli(['validate', dir]);
  assert.equal(res.code, 2, res.stderr);
  assert.match(
    res.stderr,
    /AgentTask default\/via-link: spec\.workspace: leads outside the spec directory through a symlink/,
  );
  assert.match(res.stderr, /AgentTask default\/via-file: spec\.workspace: .*afile is a file, not a directory/);
  const run = await runCli(['run', dir, '--no-table']);
  assert.equal(run.code, 1);
  assert.equal(existsSync(join(outside, 'sub')), false, 'nothing made outside');
  for (const name of ['via-link', 'via-file']) {
    const status = readStatus(dir, name)?.status;
    assert.equal(status?.reason, 'InvalidSpec', name);
    assert.equal(status?.episodes, 0, `${name}: refused before any episode`);
  }
  assert.match(
    readStatus(dir, 'via-link')?.status.message ?? '',
    /AgentTask default\/via-link: spec\.workspace: leads outside the spec directory through a symlink/,
  );
});

test('what the first episode would find: a missing promptFile is an error validate and run share; a command not found here, argv as one string and a workspace beside a similar one are warnings', async () => {
  const dir = tempDir();
  mkdirSync(join(dir, 'ws', 'add-login'), { recursive: true });
  write(
    dir,
    'tasks.yaml',
    { name: 'no-prompt', spec: { prompt: undefined, promptFile: 'PROMPT.md' } },
    { name: 'no-agent', spec: { agent: { command: ['episodic-no-such-agent-xyz', '-p'] } } },
    { name: 'one-string', spec: { agent: { command: ["node -e 'process.exit(0)' --flag"] } } },
    { name: 'typo', spec: { workspace: 'ws/add-logn' } },
  );
  const res = await runCli(['validate', dir]);
  assert.equal(res.code, 2, res.stderr);
  const errors = res.stderr.split('\n').filter((l) => l && !l.startsWith('warning: '));
  assert.equal(errors.length, 1, res.stderr);
  assert.match(
    errors[0],
    /tasks\.yaml: AgentTask default\/no-prompt: spec\.promptFile: .*ws\/no-prompt\/PROMPT\.md does not exist \(the workspace .* does not exist yet: it is created empty\)/,
  );
  assert.match(
    res.stderr,
    /^warning: .*AgentTask default\/no-agent: spec\.agent\.command: "episodic-no-such-agent-xyz" is not an executable on PATH here \(it may exist only in the episode image\)$/m,
  );
  assert.match(
    res.stderr,
    /^warning: .*AgentTask default\/one-string: spec\.agent\.command: .* is one argv entry, run as one program name; as a list: \["node","-e","process\.exit\(0\)","--flag"\]$/m,
  );
  assert.match(
    res.stderr,
    /^warning: .*AgentTask default\/typo: spec\.workspace: .*ws\/add-logn does not exist yet and will be created empty; did you mean .*ws\/add-login\?$/m,
  );

  const run = await runCli(['run', dir, '--no-table']);
  assert.equal(run.code, 1);
  const refused = readStatus(dir, 'no-prompt')?.status;
  assert.equal(refused?.reason, 'InvalidSpec');
  assert.equal(refused?.episodes, 0, 'no episode spent on a prompt file that is not there');
  assert.match(refused?.message ?? '', /tasks\.yaml: AgentTask default\/no-prompt: spec\.promptFile: /);
  // The command's first episode fails, and says which file, task and field.
  assert.match(
    readStatus(dir, 'no-agent')?.status.message ?? '',
    /tasks\.yaml: AgentTask default\/no-agent: spec\.agent\.command: cannot start episodic-no-such-agent-xyz/,
  );
});

test("a step's promptFile and its own agent command are checked as the task's are, each naming the step's field", async () => {
  const dir = tempDir();
  mkdirSync(join(dir, 'ws', 'steps'), { recursive: true });
  writeFileSync(join(dir, 'ws', 'steps', 'plan.md'), 'Plan.');
  const steps = [
    { name: 'plan', promptFile: 'plan.md' },
    { name: 'implement', promptFile: 'IMPLEMENT.md', agent: { command: ['episodic-no-such-agent-xyz'] } },
    { name: 'review', promptFile: '../../review.md', agent: { command: ["node -e 'process.exit(0)'"] } },
  ];
  write(dir, 'steps.yaml', { name: 'steps', spec: { prompt: undefined, steps } });
  const res = await runCli(['validate', dir]);
  assert.equal(res.code, 2, res.stderr);
  const errors = res.stderr.split('\n').filter((l) => l && !l.startsWith('warning: '));
  assert.equal(errors.length, 2, res.stderr);
  assert.match(
    errors[0],
    /AgentTask default\/steps: spec\.steps\[1\]\.promptFile: .*ws\/steps\/IMPLEMENT\.md does not exist$/,
  );
  assert.match(
    errors[1],
    /AgentTask default\/steps: spec\.steps\[2\]\.promptFile: must be a path inside the workspace/,
  );
  assert.match(
    res.stderr,
    /^warning: .*AgentTask default\/steps: spec\.steps\[1\]\.agent\.command: "episodic-no-such-agent-xyz" is not an executable on PATH here/m,
  );
  assert.match(
    res.stderr,
    /^warning: .*AgentTask default\/steps: spec\.steps\[2\]\.agent\.command: .* is one argv entry/m,
  );

  const run = await runCli(['run', dir, '--no-table']);
  assert.equal(run.code, 1);
  const refused = readStatus(dir, 'steps')?.status;
  assert.equal(refused?.reason, 'InvalidSpec');
  assert.equal(refused?.episodes, 0, 'no episode spent on a step whose prompt file is not there');
  assert.match(refused?.message ?? '', /AgentTask default\/steps: spec\.steps\[1\]\.promptFile: /);
});

test("a step's promptFile gone by the time its episode starts fails the episode naming the step's field", async () => {
  const dir = tempDir();
  const ws = join(dir, 'ws', 'vanish');
  mkdirSync(ws, { recursive: true });
  writeFileSync(join(ws, 'plan.md'), 'Plan.');
  writeFileSync(join(ws, 'build.md'), 'Build.');
  // The first step's agent deletes the second step's prompt file, after run checked it.
  const removeBuild = [process.execPath, '-e', "require('node:fs').rmSync('build.md')"];
  const steps = [
    { name: 'plan', promptFile: 'plan.md', agent: { command: removeBuild }, completion: { onExitZero: true } },
    { name: 'build', promptFile: 'build.md' },
  ];
  write(dir, 'vanish.yaml', { name: 'vanish', spec: { prompt: undefined, steps } });
  const run = await runCli(['run', dir, '--no-table']);
  assert.equal(run.code, 1, run.stderr);
  const status = readStatus(dir, 'vanish')?.status;
  assert.equal(status?.phase, 'Failed');
  assert.match(
    status?.message ?? '',
    /AgentTask default\/vanish: spec\.steps\[1\]\.promptFile: .*build\.md does not exist/,
  );
});

test("a gate's fix and check are checked as an agent command is, with the step's PATH, naming the gate's field", async () => {
  const dir = tempDir();
  mkdirSync(join(dir, 'ws', 'gated'), { recursive: true });
  const gates = [
    { name: 'lint', fix: ['./fmt.sh'], check: ['episodic-no-such-gate-xyz'], maxFixEpisodes: 0 },
    { name: 'test', check: ["node -e 'process.exit(0)'"] },
  ];
  const steps = [
    { name: 'plan', prompt: 'Plan.', gates: [{ name: 'ok', check: [process.execPath, '-e', '0'] }] },
    { name: 'build', prompt: 'Build.', completion: { onExitZero: true }, gates },
  ];
  write(dir, 'gated.yaml', { name: 'gated', spec: { prompt: undefined, steps } });
  const res = await runCli(['validate', dir]);
  const warnings = res.stderr.split('\n').filter((l) => l.startsWith('warning: '));
  assert.equal(res.code, 0, res.stderr);
  assert.equal(warnings.length, 3, res.stderr);
  assert.match(
    warnings[0],
    /gated\.yaml: AgentTask default\/gated: spec\.steps\[1\]\.gates\[0\]\.fix: .*ws\/gated\/fmt\.sh does not exist \(a relative path runs from the workspace\)$/,
  );
  assert.match(
    warnings[1],
    /gated\.yaml: AgentTask default\/gated: spec\.steps\[1\]\.gates\[0\]\.check: "episodic-no-such-gate-xyz" is not an executable on PATH here/,
  );
  assert.match(warnings[2], /spec\.steps\[1\]\.gates\[1\]\.check: .* is one argv entry/);

  // run warns the same before its first episode (its log is JSON: the quotes come escaped).
  const run = await runCli(['run', dir, '--no-table']);
  assert.match(
    run.stderr,
    /gated\.yaml: AgentTask default\/gated: spec\.steps\[1\]\.gates\[0\]\.check: \\"episodic-no-such/,
  );
  const s = readStatus(dir, 'gated')?.status;
  assert.equal(s?.reason, 'GateFailed', s?.message);
  assert.match(s?.message ?? '', /gate lint .*cannot start episodic-no-such-gate-xyz/);
});

test('validate and run: an output reference to no step is an error naming file and field, an undeclared key a warning, a gate check string a list hint (issue 28)', async () => {
  const dir = tempDir();
  const steps = (ref: string, check: unknown = ['true']) => [
    { name: 'plan', prompt: 'Publish <output name="MODULE">…</output>' },
    { name: 'build', prompt: `Module: ${ref}`, gates: [{ name: 'test', check }] },
  ];
  const bad = write(
    dir,
    'bad.yaml',
    { name: 'pipe', spec: { prompt: undefined, steps: steps('{{steps.planning.outputs.MODULE}}') } },
    { name: 'gate', spec: { prompt: undefined, steps: steps('{{steps.plan.outputs.MODULE}}', 'npm test') } },
  );
  const res = await runCli(['validate', bad]);
  assert.equal(res.code, 2, res.stderr);
  assert.match(
    res.stderr,
    /bad\.yaml \(document 1\): AgentTask default\/pipe: spec\.steps\[1\]\.prompt: \{\{steps\.planning\.outputs\.MODULE\}\}: no step "planning" \(spec\.steps has plan, build\); did you mean "plan"\?/,
  );
  assert.match(
    res.stderr,
    /bad\.yaml \(document 2\): AgentTask default\/gate: spec\.steps\[1\]\.gates\[0\]\.check: .*expected array, received string; give it as a list: \["npm","test"\]/,
  );

  const warnDir = tempDir();
  write(warnDir, 'warn.yaml', {
    name: 'pipe',
    spec: { prompt: undefined, steps: steps('{{steps.plan.outputs.MODUL}}') },
  });
  const warned = await runCli(['validate', warnDir]);
  assert.equal(warned.code, 0, warned.stderr);
  assert.match(
    warned.stderr,
    /^warning: .*warn\.yaml: AgentTask default\/pipe: spec\.steps\[1\]\.prompt: \{\{steps\.plan\.outputs\.MODUL\}\}: step "plan"'s prompt never asks for MODUL.*did you mean MODULE\?/m,
  );

  // run refuses the task the same way, before any episode.
  const runDir = tempDir();
  write(runDir, 'bad.yaml', {
    name: 'pipe',
    spec: { prompt: undefined, steps: steps('{{steps.planning.outputs.MODULE}}') },
  });
  const ran = await runCli(['run', runDir]);
  const status = readStatus(runDir, 'pipe')?.status;
  assert.equal(status?.reason, 'InvalidSpec', ran.stdout + ran.stderr);
  assert.match(
    status?.message ?? '',
    /spec\.steps\[1\]\.prompt: \{\{steps\.planning\.outputs\.MODULE\}\}: no step "planning"/,
  );
  assert.equal(status?.episodes, 0);
});
