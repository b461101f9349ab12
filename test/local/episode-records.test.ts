// Episode records in local mode, end to end with the real CLI and stand-in agents: one line of
// logs/NAMESPACE/NAME/episodes.jsonl per finished episode, shown by `episodic get NAME --episodes`, and
// kept straight across a torn last line, a crash between status and record, and a kill -9 mid-episode.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { parse } from 'yaml';
import { emptyStatus } from '../../controller/api/agent-task-status.ts';
import { EpisodeRecordSchema } from '../../controller/api/episode-record.ts';
import type { SpecFileTask } from '../../controller/core/ports.ts';
import { FileStatusSink } from '../../controller/sinks/local/file-status-sink.ts';
import type { EpisodeRecord } from '../../controller/api/episode-record.ts';
import { readStatus, runCli, specDir, startCli, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';
import { git } from '../support/git.ts';

const fast = { backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 } };
const plan = (done: number) => ['# Plan', ...[1, 2, 3].map((i) => `- [${i <= done ? 'x' : ' '}] step ${i}`)].join('\n');
const recordsFile = (dir: string, name: string) => join(dir, '.episodic/logs/default', name, 'episodes.jsonl');
/** The raw lines, each parsed as a record (a line that is not one fails the test). */
const rawRecords = (dir: string, name: string): EpisodeRecord[] =>
  readFileSync(recordsFile(dir, name), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => EpisodeRecordSchema.parse(JSON.parse(l)));

function gitWorkspace(dir: string, name: string): string {
  const ws = join(dir, 'ws', name);
  mkdirSync(ws, { recursive: true });
  git(ws, 'init', '-q');
  writeFileSync(join(ws, 'PLAN.md'), plan(0));
  git(ws, 'add', '.');
  git(ws, 'commit', '-qm', 'start');
  return git(ws, 'rev-parse', 'HEAD');
}

test('records: one line per finished episode, with outcome, spend and evidence; get --episodes shows them in every format', async () => {
  const dir = tempDir();
  const head = gitWorkspace(dir, 'work');
  const episodes = {
    '1': { mode: 'fail' }, // a crash: no result, so no cost
    '2': { mode: 'continue', costUSD: 0.2, writeFiles: { 'PLAN.md': plan(2), 'src.txt': 'one\ntwo\n' } },
    '3': { mode: 'success', costUSD: 0.3, writeFiles: { 'PLAN.md': plan(3) } },
  };
  specDir([{ name: 'work', spec: { ...fast, progress: { checklist: 'PLAN.md' } }, script: { episodes } }], { dir });
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);

  const records = rawRecords(dir, 'work');
  assert.deepEqual(
    records.map((r) => [r.number, r.outcome, r.exitCode, r.costUSD]),
    [
      [1, 'failed', 1, 0],
      [2, 'continue', 0, 0.2],
      [3, 'succeeded', 0, 0.3],
    ],
  );
  const [failed, progressed, done] = records;
  const status = readStatus(dir, 'work')?.status;
  assert.ok(done.startedAt && done.finishedAt);
  assert.deepEqual(
    [done.startedAt, done.finishedAt],
    [status?.lastEpisode?.startedAt, status?.lastEpisode?.finishedAt],
  );
  assert.equal(failed.reason, 'Backoff');
  assert.ok(failed.evidence?.errorFingerprint, 'a failed episode carries its error fingerprint');
  assert.deepEqual(
    [
      progressed.evidence?.workspace?.kind,
      progressed.evidence?.workspace?.headBefore,
      progressed.evidence?.workspace?.changed,
    ],
    ['git', head, true],
  );
  assert.deepEqual(progressed.evidence?.checklist, { done: 2, total: 3, inProgress: 0, failed: 0, skipped: 0 });
  assert.ok(progressed.tokens.input > 0, 'tokens as the agent reported them');
  assert.deepEqual([done.reason, done.completion, done.evidence?.checklist?.done], ['PromiseDetected', 'promise', 3]);

  const table = await runCli(['get', 'work', dir, '--episodes']);
  assert.equal(table.code, 0, table.stderr);
  const [header, ...rows] = table.stdout.trim().split('\n');
  assert.deepEqual(header.split(/\s{2,}/), [
    'EPISODE',
    'OUTCOME',
    'EXIT',
    'DURATION',
    'COST',
    'OPS',
    'FINISHED',
    'REASON',
  ]);
  assert.deepEqual(
    rows.map((r) =>
      r
        .split(/\s+/)
        .filter((_, i) => i !== 3)
        .slice(0, 4),
    ),
    [
      ['1', 'failed', '1', '$0.0000'],
      ['2', 'continue', '0', '$0.2000'],
      ['3', 'succeeded', '0', '$0.3000'],
    ],
  );
  for (const r of rows) assert.match(r.split(/\s+/)[3], /^\d+\.\ds$/, 'DURATION of each episode');
  const wide = await runCli(['get', 'work', dir, '--episodes', '-o', 'wide']);
  assert.match(wide.stdout, /CHECKLIST\s+MESSAGE/);
  const row2 = wide.stdout.split('\n')[2].split(/\s{2,}/);
  const checkpoint = progressed.evidence?.workspace?.commit ?? '';
  assert.match(checkpoint, /^[0-9a-f]{40}$/, 'episode 2 changed the git workspace: its checkpoint commit');
  assert.ok(
    row2.includes(checkpoint.slice(0, 12)) && row2.includes('2/3'),
    `episode 2's commit and checklist: ${row2.join(' | ')}`,
  );

  const json = JSON.parse((await runCli(['get', 'work', dir, '--episodes', '-o', 'json'])).stdout);
  assert.equal(json.kind, 'List');
  assert.deepEqual(
    json.items.map((i: any) => [i.kind, i.metadata.name, i.metadata.labels['episodic.dev/task']]),
    [
      ['AgentEpisode', 'work-ep-1', 'work'],
      ['AgentEpisode', 'work-ep-2', 'work'],
      ['AgentEpisode', 'work-ep-3', 'work'],
    ],
  );
  assert.deepEqual(
    json.items.map((i: any) => i.record),
    JSON.parse(JSON.stringify(records)),
  );
  const yaml = parse((await runCli(['get', 'work', dir, '--episodes', '-o', 'yaml'])).stdout);
  assert.deepEqual(yaml, json);

  const missing = await runCli(['get', 'nope', dir, '--episodes']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /no task default\/nope on record/);
  assert.equal((await runCli(['get', dir, '--episodes'])).code, 1, 'DIR read as NAME: no such task');
  // NAME DIR without --episodes is that one task (episodic get NAME [DIR]).
  const one = await runCli(['get', 'work', dir]);
  assert.equal(one.code, 0, one.stderr);
  assert.match(one.stdout, /^default\s+work\s/m);
});

test('records: a torn last line is skipped, then cut off by the next controller, which appends a record a crash lost', async () => {
  const dir = specDir([
    { name: 'torn', spec: fast, script: { steps: [{ mode: 'continue' }, { mode: 'success', costUSD: 0.4 }] } },
  ]);
  assert.equal((await runCli(['run', dir])).code, 0);
  const file = recordsFile(dir, 'torn');
  const [first, second] = readFileSync(file, 'utf8').split('\n');
  // A crash right after the status of episode 2 was written (its record never appended), and a torn line
  // from a write cut short.
  writeFileSync(file, `${first}\n`);
  appendFileSync(file, second.slice(0, 25));

  const shown = JSON.parse((await runCli(['get', 'torn', dir, '--episodes', '-o', 'json'])).stdout);
  assert.deepEqual(
    shown.items.map((i: any) => i.record.number),
    [1],
    'the torn line is not a record',
  );

  const again = await runCli(['run', dir]);
  assert.equal(again.code, 0, again.stderr);
  const records = rawRecords(dir, 'torn');
  assert.deepEqual(
    records.map((r) => [r.number, r.outcome]),
    [
      [1, 'continue'],
      [2, 'succeeded'],
    ],
  );
  const status = readStatus(dir, 'torn')?.status;
  assert.deepEqual(
    [records[1].costUSD, records[1].finishedAt, records[1].message],
    [0.4, status?.lastEpisode?.finishedAt, status?.lastEpisode?.message],
  );
  assert.equal(records[1].evidence, undefined, 'what only the lost result knew stays unknown');
  assert.equal((await runCli(['run', dir])).code, 0);
  assert.equal(rawRecords(dir, 'torn').length, 2, 'a record on file is never appended again');
});

test('records: kill -9 mid-episode and restart: the interrupted episode is recorded once, no number twice', async () => {
  const dir = tempDir();
  const pidFile = join(dir, 'pids.txt');
  specDir(
    [
      {
        name: 'crashy',
        spec: fast,
        script: {
          steps: [
            { mode: 'continue', costUSD: 0.5 },
            { mode: 'sleep', sleepSeconds: 300, pidFile },
            { mode: 'success' },
          ],
        },
      },
    ],
    { dir },
  );
  const first = startCli(['run', dir]);
  await waitFor(
    'episode 2 running',
    () => readStatus(dir, 'crashy')?.status.currentEpisode?.number === 2 && existsSync(pidFile),
  );
  first.child.kill('SIGKILL');
  await first.exited;
  assert.deepEqual(
    rawRecords(dir, 'crashy').map((r) => r.number),
    [1],
    'episode 2 ran when the controller died',
  );

  const second = await runCli(['run', dir]);
  assert.equal(second.code, 0, second.stderr);
  assert.deepEqual(
    rawRecords(dir, 'crashy').map((r) => [r.number, r.outcome]),
    [
      [1, 'continue'],
      [2, 'interrupted'],
      [3, 'succeeded'],
    ],
  );
});

test('records: a controller killed after a record but before its status: the next one, ending that episode again, does not record it twice', async () => {
  const stateDir = join(tempDir(), '.episodic');
  const task = { key: 'default/dup', namespace: 'default', name: 'dup', generation: 1, specHash: 'h' } as SpecFileTask;
  const record = (number: number, message: string) =>
    EpisodeRecordSchema.parse({ task: 'dup', number, outcome: 'succeeded', exitCode: 0, costUSD: 0.1, message });
  const dead = new FileStatusSink(stateDir, pino({ level: 'silent' }));
  await dead.load();
  const running = {
    ...emptyStatus(),
    phase: 'Running' as const,
    currentEpisode: { number: 1, startedAt: new Date().toISOString() },
  };
  await dead.write(task, running, { beforeStart: true });
  await dead.recordEpisode(task, record(1, 'by the controller that died'));

  const next = new FileStatusSink(stateDir, pino({ level: 'silent' }));
  await next.load();
  await next.recordEpisode(task, record(1, 'ended again from its log'));
  await next.recordEpisode(task, record(2, 'the next episode'));
  assert.deepEqual(
    rawRecords(stateDir.replace(/\/\.episodic$/, ''), 'dup').map((r) => [r.number, r.message]),
    [
      [1, 'by the controller that died'],
      [2, 'the next episode'],
    ],
  );
});
