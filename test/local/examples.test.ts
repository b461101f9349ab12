// The shipped examples stay valid, and the offline demo really finishes its work.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, readStatus, runCli, tempDir } from '../support/local.ts';

test('every example directory validates, read as episodic run reads it', async () => {
  const subdirs = (dir: string) =>
    readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => join(dir, d.name));
  // examples/pipelines and examples/gizmo hold one example per directory (and their stand-in agents).
  const dirs = subdirs(join(REPO, 'examples')).flatMap((d) =>
    /\/(pipelines|gizmo)$/.test(d) ? subdirs(d).filter((p) => !p.endsWith('/agents')) : [d],
  );
  assert.ok(dirs.length >= 5);
  const res = await runCli(['validate', ...dirs]);
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stdout, /^\d+ AgentTasks, \d+ AgentBudgets?, \d+ AgentTriggers? valid/);
});

test('the offline demo works through each plan, one item per episode, and exits 0', async () => {
  const dir = tempDir();
  cpSync(join(REPO, 'examples/demo'), dir, { recursive: true, filter: (src) => !/\/(ws|\.episodic)$/.test(src) });
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  for (const name of ['build-parser', 'write-docs']) {
    const s = readStatus(dir, name)?.status;
    assert.equal(s?.phase, 'Succeeded');
    assert.equal(s?.episodes, 3, 'three plan items, one per episode');
    assert.doesNotMatch(readFileSync(join(dir, 'ws', name, 'PLAN.md'), 'utf8'), /- \[ \]/);
  }
});

test('the leash example: the plan finishes on its checklist, the stuck and the over-claiming agents trip the breaker', async () => {
  const dir = tempDir();
  cpSync(join(REPO, 'examples/leash'), dir, { recursive: true, filter: (src) => !/\/(ws|\.episodic)$/.test(src) });
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1, res.stderr);
  const plan = readStatus(dir, 'ticks-plan')?.status;
  assert.equal(plan?.phase, 'Succeeded');
  assert.equal(plan?.reason, 'ChecklistComplete');
  assert.deepEqual([plan?.progress?.done, plan?.progress?.total], [3, 3]);
  for (const name of ['stuck', 'claims-done']) {
    const s = readStatus(dir, name)?.status;
    assert.equal(s?.phase, 'NeedsReview', name);
    assert.equal(s?.reason, 'CircuitOpen', name);
    assert.equal(s?.episodes, 3, name);
  }
  const saturated = readStatus(dir, 'tests-saturated')?.status;
  assert.equal(saturated?.reason, 'SignalsScore');
  assert.equal(saturated?.episodes, 3);
  assert.equal(saturated?.lastEpisode?.completionScore, 100);
  const resumed = readStatus(dir, 'resumed')?.status;
  assert.equal(resumed?.reason, 'CircuitOpen');
  assert.equal(resumed?.episodes, 4, '3 to open, 1 more in HalfOpen after the auto-resume');
  assert.equal(resumed?.resume?.heldBy, 'maxAutoResumes');
  const manual = await runCli(['resume', 'resumed', dir, '--episodes', '1']);
  assert.equal(manual.code, 0, manual.stderr);
  await runCli(['run', dir]);
  // A person's resume also renews the policy's allowance: one HalfOpen episode, one auto-resume, one more.
  const after = readStatus(dir, 'resumed')?.status;
  assert.equal(after?.episodes, 6);
  assert.deepEqual(
    after?.audit?.filter((a) => a.action === 'Resumed').map((a) => a.by.startsWith('policy:')),
    [true, false, true],
  );
  const rejected = (res.stdout + res.stderr)
    .split('\n')
    .filter((l) => l.includes('"CompletionRejected"') && l.includes('claims-done'));
  assert.equal(rejected.length, 3, 'every claim without a change is rejected');
});

test("the checkpoints example: one commit per episode on the git workspace's branch, with trailers; hashes in the records", async () => {
  const dir = tempDir();
  cpSync(join(REPO, 'examples/checkpoints'), dir, {
    recursive: true,
    filter: (src) => !/\/(origin\.git|\.episodic)$/.test(src),
  });
  const origin = join(dir, 'origin.git');
  execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', origin]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(readStatus(dir, 'plan')?.status.reason, 'ChecklistComplete');
  const log = execFileSync(
    'git',
    ['-C', origin, 'log', '--format=%H %s|%(trailers:key=Episodic-Episode,valueonly,separator=)', 'episodic/plan'],
    { encoding: 'utf8' },
  )
    .trim()
    .split('\n');
  assert.deepEqual(
    log.map((l) => l.slice(41)),
    [
      'episodic: plan episode 3 (succeeded)|3',
      'episodic: plan episode 2 (continue)|2',
      'episodic: plan episode 1 (continue)|1',
    ],
  );
  const wide = await runCli(['get', 'plan', dir, '--episodes', '-o', 'wide']);
  for (const line of log) assert.ok(wide.stdout.includes(line.slice(0, 12)), `${line.slice(0, 12)} in\n${wide.stdout}`);
});

/** A copy of examples/pipelines (its stand-in agents beside the example) to run in. */
function pipelinesCopy(): string {
  const dir = tempDir();
  cpSync(join(REPO, 'examples/pipelines'), dir, { recursive: true, filter: (src) => !/\/(ws|\.episodic)$/.test(src) });
  return dir;
}

test('the feature pipeline example: plan → implement → test → review, outputs passed on, a lint and a test gate', async () => {
  const dir = join(pipelinesCopy(), 'feature');
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const s = readStatus(dir, 'slugify')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.deepEqual(
    s?.steps?.map((x) => [x.name, x.phase, x.episodes, x.outputs]),
    [
      ['plan', 'Succeeded', 1, { MODULE: 'src/slug.mjs', FUNCTION: 'slugify' }],
      // The test gate fails once (no lowercase): one fix episode, whose prompt carries the gate's output.
      ['implement', 'Succeeded', 2, { MODULE: 'src/slug.mjs', EXPORTS: 'slugify' }],
      ['test', 'Succeeded', 1, { TESTS: '3 of 3 passed' }],
      ['review', 'Succeeded', 1, { VERDICT: 'approved' }],
    ],
  );
  // The lint gate's fix removed the trailing blanks; the fix episode lowercased.
  assert.equal(
    readFileSync(join(dir, 'ws/slugify/src/slug.mjs'), 'utf8'),
    "export function slugify(title) {\n  return title.trim().toLowerCase().split(/\\s+/).join('-');\n}\n",
  );
  const get = await runCli(['get', dir, '-o', 'json']);
  assert.equal(get.code, 0, get.stderr);
  assert.match(get.stdout, /"VERDICT": "approved"/);
});

test('the handoff example: client reads the outputs of api, the task it depends on', async () => {
  const dir = join(pipelinesCopy(), 'handoff');
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  assert.deepEqual(readStatus(dir, 'api')?.status.outputs, { URL: 'http://127.0.0.1:8080', ROUTES: '/health /items' });
  assert.equal(readStatus(dir, 'client')?.status.phase, 'Succeeded');
  assert.equal(
    readFileSync(join(dir, 'ws/client/client.mjs'), 'utf8'),
    'await fetch("http://127.0.0.1:8080/health");\nawait fetch("http://127.0.0.1:8080/items");\n',
  );
});
