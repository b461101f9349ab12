// Supervised resume end to end in local mode, with stand-in agents that speak Claude Code's stream-json:
// a person resumes a tripped task with `episodic resume` (a running --watch and a later run both pick it
// up), and the policies resume on their own until a check holds the task — all of it in the audit trail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readStatus, runCli, specDir, startCli } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const fast = {
  backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 },
  breaker: { noProgressEpisodes: 2, halfOpenEpisodes: 1, sameErrorEpisodes: 0 },
};
const stuck = { default: { mode: 'continue' } };

test('resume: a person resumes a tripped task; a running --watch picks the request up and the task runs again in HalfOpen', async () => {
  const dir = specDir([{ name: 'stuck', spec: { ...fast, resume: { policy: 'Manual' } }, script: stuck }]);
  const spec = readFileSync(join(dir, 'stuck.yaml'), 'utf8');
  const run = startCli(['run', dir, '--watch', '--no-table']);
  try {
    await waitFor('breaker open', () => readStatus(dir, 'stuck')?.status.reason === 'CircuitOpen');
    assert.equal(readStatus(dir, 'stuck')?.status.episodes, 3);

    const res = await runCli(['resume', 'stuck', dir, '--by', 'alice']);
    assert.equal(res.code, 0, res.stderr);
    const token = /token ([0-9a-f-]{36})/.exec(res.stdout)?.[1];
    assert.ok(token, res.stdout);
    // One more episode in HalfOpen without progress opens the breaker again.
    const s = await waitFor('resumed and open again', () => {
      const st = readStatus(dir, 'stuck')?.status;
      return st?.resume?.handledToken === token && st.phase === 'NeedsReview' && st.episodes === 4 ? st : undefined;
    });
    assert.equal(s.breaker?.state, 'Open');
    assert.equal(s.resume?.lastResumeBy, 'user:alice');
    assert.deepEqual(
      s.audit?.map((a) => `${a.action} ${a.by} ${a.reason ?? ''}`.trim()),
      [
        'Stopped controller CircuitOpen',
        'AutoResumeHeld policy:Manual policy',
        'Resumed user:alice CircuitOpen',
        'Stopped controller CircuitOpen',
        'AutoResumeHeld policy:Manual policy',
      ],
    );
    assert.equal(s.audit?.find((a) => a.action === 'Resumed')?.token, token);
    assert.match(run.output(), /"event":"Resumed".*resumed from CircuitOpen by user:alice/);
    assert.equal(readFileSync(join(dir, 'stuck.yaml'), 'utf8'), spec, 'the spec file is never edited');

    const audit = await runCli(['get', 'stuck', dir, '--audit']);
    assert.equal(audit.code, 0, audit.stderr);
    assert.match(
      audit.stdout,
      /default\/stuck: NeedsReview \(CircuitOpen\); auto-resumes 0, episodes granted 0, held by policy/,
    );
    assert.match(
      audit.stdout,
      /Resumed\s+user:alice\s+CircuitOpen\s+resumed from CircuitOpen by user:alice \(request [0-9a-f-]+\); circuit breaker HalfOpen/,
    );
  } finally {
    run.child.kill('SIGINT');
    await run.exited;
  }
});

test('resume: a request made while no controller runs is picked up by the next run, with the episodes it grants', async () => {
  const dir = specDir([
    {
      name: 'capped',
      spec: { ...fast, breaker: { noProgressEpisodes: 0 }, limits: { maxEpisodes: 2, episodeTimeoutSeconds: 30 } },
      script: stuck,
    },
  ]);
  const first = await runCli(['run', dir]);
  assert.equal(first.code, 1);
  assert.equal(readStatus(dir, 'capped')?.status.reason, 'MaxEpisodesReached');

  const refused = await runCli(['resume', 'nope', dir]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /no task default\/nope on record/);
  const bad = await runCli(['resume', 'capped', dir, '--episodes', 'lots']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--episodes: "lots" is not a number/);

  const res = await runCli(['resume', 'capped', dir, '--episodes', '3']);
  assert.equal(res.code, 0, res.stderr);
  assert.ok(existsSync(join(dir, '.episodic', 'resume', 'default', 'capped.json')));
  const second = await runCli(['run', dir]);
  assert.equal(second.code, 1);
  const s = readStatus(dir, 'capped')?.status;
  assert.equal(s?.reason, 'MaxEpisodesReached');
  assert.equal(s?.episodes, 5);
  assert.equal(s?.resume?.grantedEpisodes, 3);
  assert.match(s?.message ?? '', /5 episodes without finishing the task \(maxEpisodes 2 \+ 3 granted\)/);
  // The request is handled once: another run does not resume the task again.
  const third = await runCli(['run', dir]);
  assert.equal(third.code, 1);
  assert.equal(readStatus(dir, 'capped')?.status.episodes, 5);
  const running = await runCli(['resume', 'capped', dir]);
  assert.equal(running.code, 0, 'NeedsReview again: a new request is accepted');
});

test('resume: Aggressive auto-resumes once after its cooldown (a run without --watch waits for it), then holds the task for a person', async () => {
  const dir = specDir([
    {
      name: 'agg',
      spec: { ...fast, resume: { policy: 'Aggressive', cooldownSeconds: 1, maxAutoResumes: 1 } },
      script: stuck,
    },
  ]);
  const res = await runCli(['run', dir, '--metrics-file', join(dir, 'metrics.prom')]);
  assert.equal(res.code, 1, res.stderr);
  const s = readStatus(dir, 'agg')?.status;
  assert.equal(s?.phase, 'NeedsReview');
  assert.equal(s?.reason, 'CircuitOpen');
  assert.equal(s?.episodes, 4, '3 to trip, 1 in HalfOpen after the auto-resume');
  assert.equal(s?.resume?.autoResumes, 1);
  assert.equal(s?.resume?.heldBy, 'maxAutoResumes');
  assert.deepEqual(
    s?.audit?.map((a) => a.action),
    ['Stopped', 'AutoResumeScheduled', 'Resumed', 'Stopped', 'AutoResumeHeld'],
  );
  assert.match(s?.audit?.at(-1)?.message ?? '', /auto-resumed 1 times \(maxAutoResumes 1\); a person decides now/);
  const at = (action: string) => Date.parse(s?.audit?.find((e) => e.action === action)?.at ?? '');
  assert.ok(at('Resumed') - at('Stopped') >= 1000, 'resumed no sooner than cooldownSeconds after the stop');
  const metrics = readFileSync(join(dir, 'metrics.prom'), 'utf8');
  assert.match(metrics, /episodic_auto_resumes_total\{namespace="default",policy="Aggressive"\} 1/);
  assert.match(metrics, /episodic_tasks_needing_review\{namespace="default",reason="CircuitOpen"\} 1/);
});

test('resume: Conservative resumes a task that once progressed, and holds it when the trial shows no progress', async () => {
  const episodes = { '1': { mode: 'continue', writeFiles: { 'step-1.txt': 'work' } } };
  const dir = specDir([
    {
      name: 'stalled',
      spec: { ...fast, resume: { cooldownSeconds: 0 } },
      script: { episodes, default: { mode: 'continue' } },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1, res.stderr);
  const s = readStatus(dir, 'stalled')?.status;
  assert.equal(s?.reason, 'CircuitOpen');
  assert.equal(s?.episodes, 5, 'progress in 1, open after 4, one trial episode after the auto-resume');
  assert.equal(s?.resume?.lastResumeBy, 'policy:Conservative');
  assert.equal(s?.resume?.heldBy, 'noProgressSinceResume');
  assert.match(res.stdout + res.stderr, /"event":"AutoResumed"/);
  assert.match(
    res.stdout + res.stderr,
    /"event":"AutoResumeHeld".*policy Conservative: no progress since its last resume/,
  );
});

test('resume: a malformed request file is rejected in the audit trail, naming the file and field, and handled once', async () => {
  const dir = specDir([
    {
      name: 'capped',
      spec: { ...fast, breaker: { noProgressEpisodes: 0 }, limits: { maxEpisodes: 1, episodeTimeoutSeconds: 30 } },
      script: stuck,
    },
  ]);
  assert.equal((await runCli(['run', dir])).code, 1);
  const file = join(dir, '.episodic', 'resume', 'default', 'capped.json');
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify({ token: 'by-hand', by: 'carol', episodes: -1 }));
  assert.equal((await runCli(['run', dir])).code, 1);
  const s = readStatus(dir, 'capped')?.status;
  assert.equal(s?.episodes, 1);
  assert.equal(s?.resume?.handledToken, 'by-hand');
  const entry = s?.audit?.at(-1);
  assert.deepEqual([entry?.action, entry?.by], ['ResumeRejected', 'user:carol']);
  assert.ok(
    entry?.message.includes(`${file}: episodes: must be a whole number from 1 to 10000, got -1`),
    entry?.message,
  );
});
