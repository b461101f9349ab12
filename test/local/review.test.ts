// What needs a person, end to end in local mode (`episodic run`, real processes, the RalphSharp example's
// stand-in agent): EXECUTE marks an item [!] and logs to DISCOVERY.md, an idea goes to IDEAS.md; status.review
// and `episodic get NAME --review` list them, the entry DISCOVERY.md had before the task started is not
// listed, and ReviewItems says how many when the task ends. A task with nothing to review says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, readStatus, runCli, specDir, tempDir } from '../support/local.ts';

function ralphsharp(): string {
  const dir = tempDir();
  cpSync(join(REPO, 'examples/pipelines/ralphsharp'), dir, { recursive: true });
  return dir;
}

test('the RalphSharp pipeline: status.review lists the [!] item and the new entries, not the ones from before', async () => {
  const dir = ralphsharp();
  const before = readFileSync(join(dir, 'project/DISCOVERY.md'), 'utf8');
  assert.match(before, /Node 24 only/, 'an entry present before the task started');

  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const status = readStatus(dir, 'ralphsharp')?.status;
  assert.equal(status?.phase, 'Succeeded');
  assert.deepEqual(
    status?.steps?.map((s) => [s.name, s.phase, s.episodes]),
    [
      ['explore', 'Succeeded', 1],
      ['refine', 'Succeeded', 1],
      ['plan', 'Succeeded', 1],
      ['execute', 'Succeeded', 4],
    ],
  );
  assert.match(readFileSync(join(dir, 'project/PLAN.md'), 'utf8'), /- \[!\] publish the package/);
  assert.deepEqual(status?.review?.flagged, ['publish the package to the registry (files: package.json)']);
  assert.deepEqual(
    status?.review?.entries.map((e) => [e.file, e.episode, e.text]),
    [
      ['IDEAS.md', 5, 'greet() and farewell() could share one formatter.'],
      ['DISCOVERY.md', 6, 'Publishing needs a registry token; none is configured, so the item waits for a person.'],
    ],
  );
  const events = `${res.stdout}${res.stderr}`.split('\n').filter((l) => l.includes('"ReviewItems"'));
  assert.equal(events.length, 1, 'once, when the task ended');
  assert.match(events[0], /3 items need review: 1 \[!\] item in PLAN\.md, 2 new entries in DISCOVERY\.md \/ IDEAS\.md/);

  const get = await runCli(['get', 'ralphsharp', dir, '--review']);
  assert.equal(get.code, 0, get.stderr);
  assert.deepEqual(get.stdout.trimEnd().split('\n'), [
    'default/ralphsharp: Succeeded (PromiseDetected); 3 items need review: 1 [!] item in the plan, 2 new entries in DISCOVERY.md / IDEAS.md',
    '  [!] publish the package to the registry (files: package.json)',
    '  IDEAS.md (episode 5): greet() and farewell() could share one formatter.',
    '  DISCOVERY.md (episode 6): Publishing needs a registry token; none is configured, so the item waits for a person.',
  ]);
  assert.doesNotMatch(get.stdout, /Node 24/, 'what was there before the task started is not new');
  const json = JSON.parse((await runCli(['get', 'ralphsharp', dir, '--review', '-o', 'json'])).stdout);
  assert.equal(json.review.entries.length, 2);
});

test('agent text in review items is printable; a task with nothing to review says so', async () => {
  const writes = (files: Record<string, string>) => ({ default: { mode: 'success', writeFiles: files } });
  const dir = specDir([
    { name: 'flags', script: writes({ 'PLAN.md': '- [!] \u001b[31mred\u001b[0m and a bell\u0007\n' }) },
    { name: 'calm', script: writes({ 'PLAN.md': '- [x] done\n', 'IDEAS.md': '' }) },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const flags = await runCli(['get', 'flags', dir, '--review']);
  assert.match(flags.stdout, /\[!\] \\x1b\[31mred\\x1b\[0m and a bell\\x07\n/);
  assert.doesNotMatch(flags.stdout, /\u001b/);
  const calm = await runCli(['get', 'calm', dir, '--review']);
  assert.equal(calm.stdout, 'default/calm: Succeeded (PromiseDetected); nothing needs review\n');
  const missing = await runCli(['get', 'nope', dir, '--review']);
  assert.equal(missing.code, 1);
  assert.equal((await runCli(['get', '--review'])).code, 2);
});

test('the RalphSharp pipeline rerun half-done: EXPLORE, REFINE and PLAN skipped by PLAN.md, EXECUTE goes on; only the new entries are listed', async () => {
  const dir = ralphsharp();
  const tasks = join(dir, 'tasks.yaml');
  const spec = readFileSync(tasks, 'utf8');
  // First run: EXECUTE may take two episodes only, so two items stay pending.
  writeFileSync(tasks, spec.replace('limits: { maxEpisodes: 10 }', 'limits: { maxEpisodes: 2 }'));
  const first = await runCli(['run', dir]);
  assert.equal(first.code, 1, first.stderr);
  const stopped = readStatus(dir, 'ralphsharp')?.status;
  assert.deepEqual(
    [stopped?.phase, stopped?.reason, stopped?.step?.name],
    ['NeedsReview', 'MaxEpisodesReached', 'execute'],
  );
  assert.match(readFileSync(join(dir, 'project/PLAN.md'), 'utf8'), /- \[ \] publish/);
  assert.deepEqual(
    stopped?.review?.entries.map((e) => e.file),
    ['IDEAS.md'],
  );

  // A person reruns the pipeline from scratch (a new task on the same workspace): it resumes at EXECUTE.
  rmSync(join(dir, '.episodic'), { recursive: true });
  writeFileSync(tasks, spec);
  const second = await runCli(['run', dir]);
  assert.equal(second.code, 0, second.stderr);
  const status = readStatus(dir, 'ralphsharp')?.status;
  assert.equal(status?.phase, 'Succeeded');
  assert.deepEqual(
    status?.steps?.map((s) => [s.name, s.phase, s.reason, s.episodes]),
    [
      ['explore', 'Skipped', 'SkipWhen', 0],
      ['refine', 'Skipped', 'SkipWhen', 0],
      ['plan', 'Skipped', 'SkipWhen', 0],
      ['execute', 'Succeeded', 'PromiseDetected', 2],
    ],
  );
  assert.deepEqual(status?.review?.flagged, ['publish the package to the registry (files: package.json)']);
  assert.deepEqual(
    status?.review?.entries.map((e) => e.file),
    ['DISCOVERY.md'],
    'the idea the first run logged was there before this task started',
  );
});
