// A schedule trigger end to end through `episodic run`, offline: the tick due now becomes one task (a spec
// document under the state dir), which runs; a second run, or one with the trigger's status lost, creates
// nothing more. And `episodic validate` names the file and field of a broken trigger.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE, FAKE_CLAUDE, REPO, readStatus, runCli, tempDir } from '../support/local.ts';

const TRIGGER = `apiVersion: episodic.dev/v1alpha1
kind: AgentTrigger
metadata:
  name: yearly
spec:
  source:
    schedule:
      cron: '0 3 1 1 *'
      timeZone: Europe/Berlin
  template:
    labels:
      team: notes
    spec:
      prompt: 'Notes for {{tick}}. <promise>COMPLETE</promise>'
      agent:
        command: [${JSON.stringify(NODE)}, ${JSON.stringify(FAKE_CLAUDE)}, --fake-mode=success]
        output: claude
      limits:
        maxEpisodes: 2
        episodeTimeoutSeconds: 30
`;
// 03:00 in Berlin on 1 January 2026 is 02:00 UTC.
const TICK = new Date('2026-01-01T02:00:00Z');
const TASK = 'yearly-20260101-0200';

function triggerStatus(dir: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(dir, '.episodic/triggers/default/yearly.json'), 'utf8'));
}

function createdTasks(dir: string): string[] {
  return readdirSync(join(dir, '.episodic/created/default')).filter((f) => f.endsWith('.yaml'));
}

test('a schedule: the missed tick runs once as TRIGGER-YYYYMMDD-HHMM (UTC); a second run and a lost status add nothing', async () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'yearly.yaml'), TRIGGER);
  // The trigger was last handled before the 2026 tick: as if the controller had been down since.
  mkdirSync(join(dir, '.episodic/triggers/default'), { recursive: true });
  writeFileSync(
    join(dir, '.episodic/triggers/default/yearly.json'),
    JSON.stringify({ lastTick: '2025-06-01T00:00:00.000Z' }),
  );
  const first = await runCli(['run', dir, '--no-table']);
  assert.equal(first.code, 0, first.stderr);
  assert.deepEqual(createdTasks(dir), [`${TASK}.yaml`]);
  const status = readStatus(dir, TASK)?.status;
  assert.equal(status?.phase, 'Succeeded');
  assert.equal(triggerStatus(dir).lastTick, TICK.toISOString());
  assert.equal(triggerStatus(dir).tasksCreated, 1);
  assert.match(String(triggerStatus(dir).nextPollAt), /^2027-01-01T02:00:00/);
  const manifest = JSON.parse(readFileSync(join(dir, `.episodic/created/default/${TASK}.yaml`), 'utf8'));
  assert.equal(manifest.spec.prompt, `Notes for ${TICK.toISOString()}. <promise>COMPLETE</promise>`);
  assert.equal(manifest.metadata.labels['episodic.dev/trigger'], 'yearly');
  assert.equal(manifest.metadata.labels.team, 'notes');
  // get -o wide names the trigger that made it and when it first started (issue 31 §2).
  const wide = await runCli(['get', dir, '-o', 'wide']);
  assert.equal(wide.code, 0, wide.stderr);
  assert.match(wide.stdout, /\sPARENT\s+TRIGGER\s+STARTED\s/);
  assert.match(
    wide.stdout,
    new RegExp(`${TASK}\\s+Succeeded\\s.*\\syearly\\s+\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\\s`),
  );
  // Its default workspace too is under the state dir (issue 28: it was ws/NAME beside the trigger's file).
  assert.deepEqual(readdirSync(dir).sort(), ['.episodic', 'yearly.yaml'], 'the spec dir is not written');
  assert.deepEqual(readdirSync(join(dir, '.episodic/workspaces/default')), [TASK]);

  const second = await runCli(['run', dir, '--no-table']);
  assert.equal(second.code, 0, second.stderr);
  assert.deepEqual(createdTasks(dir), [`${TASK}.yaml`]);

  // Status lost and set back: the same tick is due again, but its task's name exists.
  rmSync(join(dir, '.episodic/triggers'), { recursive: true });
  mkdirSync(join(dir, '.episodic/triggers/default'), { recursive: true });
  writeFileSync(
    join(dir, '.episodic/triggers/default/yearly.json'),
    JSON.stringify({ lastTick: '2025-06-01T00:00:00.000Z' }),
  );
  const third = await runCli(['run', dir, '--no-table']);
  assert.equal(third.code, 0, third.stderr);
  assert.deepEqual(createdTasks(dir), [`${TASK}.yaml`]);
  assert.equal(readStatus(dir, TASK)?.status.episodes, 1, 'the task did not run again');
});

test('validate names the file and field of a broken trigger', async () => {
  const dir = tempDir();
  const file = join(dir, 'bad.yaml');
  writeFileSync(
    file,
    TRIGGER.replace("cron: '0 3 1 1 *'", "cron: '0 3 1 1'").replace(
      'timeZone: Europe/Berlin',
      'timeZone: Europe/Berlni',
    ),
  );
  const res = await runCli(['validate', file]);
  assert.equal(res.code, 2);
  assert.match(
    res.stderr,
    /bad\.yaml: AgentTrigger default\/yearly: spec\.source\.schedule\.timeZone: unknown time zone "Europe\/Berlni"/,
  );
});

test('the schedule example runs offline: the tick due after an hour down becomes one task that writes its notes', async () => {
  const dir = tempDir();
  cpSync(join(REPO, 'examples/triggers/schedule.yaml'), join(dir, 'schedule.yaml'));
  cpSync(join(REPO, 'examples/triggers/agents'), join(dir, 'agents'), { recursive: true });
  mkdirSync(join(dir, '.episodic/triggers/default'), { recursive: true });
  const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
  writeFileSync(join(dir, '.episodic/triggers/default/nightly-notes.json'), JSON.stringify({ lastTick: hourAgo }));
  const res = await runCli(['run', dir, '--no-table']);
  assert.equal(res.code, 0, res.stderr);
  const [task] = readdirSync(join(dir, '.episodic/created/default')).map((f) => f.replace(/\.yaml$/, ''));
  const [, day, hhmm] = /^nightly-notes-(\d{8})-(\d{4})$/.exec(task) ?? [];
  assert.ok(day && hhmm, task);
  assert.equal(readStatus(dir, task)?.status.phase, 'Succeeded');
  const tick = `${day.slice(0, 4)}-${day.slice(4, 6)}-${day.slice(6)}T${hhmm.slice(0, 2)}:${hhmm.slice(2)}:00.000Z`;
  const notes = join(dir, '.episodic/workspaces/default', task, 'NOTES.md');
  assert.match(readFileSync(notes, 'utf8'), new RegExp(`tick of ${tick}`));
  // ./agents/notes-agent.mjs is relative to the trigger's file: a state dir elsewhere changes nothing (issue 28).
  const state = join(tempDir(), 'state');
  mkdirSync(join(state, 'triggers/default'), { recursive: true });
  writeFileSync(join(state, 'triggers/default/nightly-notes.json'), JSON.stringify({ lastTick: hourAgo }));
  const elsewhere = await runCli(['run', dir, '--no-table', '--state-dir', state]);
  assert.equal(elsewhere.code, 0, elsewhere.stdout + elsewhere.stderr);
  const [again] = readdirSync(join(state, 'created/default')).map((f) => f.replace(/\.yaml$/, ''));
  assert.match(readFileSync(join(state, 'workspaces/default', again, 'NOTES.md'), 'utf8'), /tick of /);
});
