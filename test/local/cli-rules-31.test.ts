// The rules behind what the CLI shows (issue 31 §2), table-tested: get's episode cells, the text log lines,
// the trigger lines of the live table, what run says at its end, and the "cannot start" wording.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentTriggerSpecSchema } from '../../controller/api/agent-trigger.ts';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import { EpisodeRecordSchema } from '../../controller/api/episode-record.ts';
import { durationBetween, formatDuration } from '../../controller/cli/elapsed.ts';
import { episodeTable, gatesCell, opsCell, taskStarted, taskTable } from '../../controller/cli/get-rows.ts';
import { hookLines, lastCell, nextCell, sourceCell } from '../../controller/cli/live-triggers.ts';
import { renderScreen } from '../../controller/cli/live-table.ts';
import { nextSteps, nothingToRun } from '../../controller/cli/run-report.ts';
import { shellWord } from '../../controller/cli/invocation.ts';
import { cannotStartMessage } from '../../controller/executors/process/cannot-start.ts';
import { formatLogChunk, formatLogLine } from '../../controller/util/log-lines.ts';

test('DURATION: tenths under ten seconds, then minutes and hours; nothing without both times', () => {
  const cases: Array<[number, string]> = [
    [0, '0.0s'],
    [420, '0.4s'],
    [9_940, '9.9s'],
    [9_960, '9s'],
    [65_500, '1m05s'],
    [7_380_000, '2h03m'],
    [30 * 86_400_000 + 3_700_000, '30d01h'],
  ];
  for (const [ms, shown] of cases) assert.equal(formatDuration(ms), shown, String(ms));
  assert.equal(durationBetween('2026-12-01T18:44:00Z', '2026-12-01T18:44:02.5Z'), '2.5s');
  assert.equal(durationBetween(undefined, '2026-12-01T18:44:02Z'), '');
  assert.equal(durationBetween('2026-12-01T18:44:00Z', 'soon'), '');
});

test('GATES: passed and failed counted, the failed named; a gate not started (null) failed', () => {
  const cases: Array<[Parameters<typeof gatesCell>[0], string]> = [
    [undefined, ''],
    [[], ''],
    [[{ name: 'lint', exitCode: 0 }], '1 passed'],
    [
      [
        { name: 'lint', exitCode: 0 },
        { name: 'test', exitCode: 1 },
      ],
      '1 passed, 1 failed: test',
    ],
    [[{ name: 'build', exitCode: null }], '0 passed, 1 failed: build'],
  ];
  for (const [gates, shown] of cases) assert.equal(gatesCell(gates), shown, JSON.stringify(gates));
});

test('OPS: applied from the record ops, rejected from opsRejected (one per "; ")', () => {
  const cases: Array<[Parameters<typeof opsCell>[0], string]> = [
    [{}, ''],
    [{ ops: ['set plan', 'push 2'] }, '2 applied'],
    [{ opsRejected: 'line 3: unknown op "rm"' }, '0 applied, 1 rejected'],
    [{ ops: ['send boss'], opsRejected: 'line 1: bad key; line 4: spawn limit reached' }, '1 applied, 2 rejected'],
  ];
  for (const [record, shown] of cases) assert.equal(opsCell(record), shown, JSON.stringify(record));
});

test('get --episodes: STEP and GATES only for a pipeline; DURATION and OPS always', () => {
  const record = (extra: object) =>
    EpisodeRecordSchema.parse({ task: 't', number: 1, outcome: 'continue', exitCode: 0, ...extra });
  const plain = episodeTable(
    [record({ startedAt: '2026-12-01T00:00:00Z', finishedAt: '2026-12-01T00:00:03Z' })],
    false,
  );
  assert.deepEqual(plain.header, ['EPISODE', 'OUTCOME', 'EXIT', 'DURATION', 'COST', 'OPS', 'FINISHED', 'REASON']);
  assert.deepEqual(plain.rows[0].slice(0, 4), ['1', 'continue', '0', '3.0s']);
  const piped = episodeTable(
    [record({ step: 'build', gates: [{ name: 'test', exitCode: 1 }], ops: ['set a'] })],
    false,
  );
  assert.deepEqual(piped.header.slice(0, 8), [
    'EPISODE',
    'STEP',
    'OUTCOME',
    'EXIT',
    'DURATION',
    'COST',
    'GATES',
    'OPS',
  ]);
  assert.deepEqual(piped.rows[0].slice(6, 8), ['0 passed, 1 failed: test', '1 applied']);
});

test('get: PARENT from the owner label; -o wide TRIGGER and STARTED (the first episode, else the running one)', () => {
  const status = { ...emptyStatus(), currentEpisode: { number: 1, startedAt: '2026-12-01T18:44:00.123Z' } };
  const labels = { 'episodic.dev/parent': 'boss', 'episodic.dev/trigger': 'nightly' };
  const child = { namespace: 'default', name: 'kid', labels, status, started: taskStarted(undefined, status) };
  const narrow = taskTable([child], false);
  assert.equal(narrow.rows[0][narrow.header.indexOf('PARENT')], 'boss');
  assert.ok(!narrow.header.includes('TRIGGER'));
  const wide = taskTable([child], true);
  assert.equal(wide.rows[0][wide.header.indexOf('TRIGGER')], 'nightly');
  assert.equal(wide.rows[0][wide.header.indexOf('STARTED')], '2026-12-01T18:44:00Z');
  const oldest = EpisodeRecordSchema.parse({
    task: 'kid',
    number: 1,
    outcome: 'continue',
    exitCode: 0,
    startedAt: 'A',
  });
  assert.equal(taskStarted(oldest, status), 'A');
  assert.equal(taskTable([{ namespace: 'default', name: 'root', status: emptyStatus() }], false).rows[0][6], '');
});

test('text log lines: time, task (or trigger), level word for warnings, cost and chosen fields; escaped', () => {
  const at = '2026-12-02T00:36:13.241Z';
  const cases: Array<[Record<string, unknown>, string]> = [
    [
      { level: 'info', time: at, namespace: 'default', task: 'build', costUSD: 0.0123, msg: 'episode 1 ended' },
      '00:36:13  build  episode 1 ended — $0.0123',
    ],
    [{ level: 'info', time: at, namespace: 'team', task: 'b', costUSD: 0, msg: 'x' }, '00:36:13  team/b  x'],
    [
      { level: 'warn', time: at, trigger: 'default/nightly', err: 'HTTP 500', msg: 'trigger pass failed' },
      '00:36:13  trigger default/nightly  warning: trigger pass failed — HTTP 500',
    ],
    [
      { level: 'info', time: at, url: 'http://127.0.0.1:9/metrics', msg: 'serving metrics' },
      '00:36:13  serving metrics — url http://127.0.0.1:9/metrics',
    ],
    [
      { level: 'error', time: at, err: { message: 'boom', stack: 'at x' }, msg: 'reconcile failed' },
      '00:36:13  error: reconcile failed — boom',
    ],
    [
      { level: 'info', time: at, task: 'evil', msg: 'said \u001b]0;pwned\u0007\nnext' },
      '00:36:13  evil  said \\x1b]0;pwned\\x07\\nnext',
    ],
  ];
  for (const [record, line] of cases) assert.equal(formatLogLine(record), line);
  assert.equal(formatLogChunk(`${JSON.stringify(cases[1][0])}\nnot json\n`), `${cases[1][1]}\nnot json\n`);
});

const trigger = (name: string, source: object, extra: object = {}) => ({
  namespace: 'default',
  name,
  spec: AgentTriggerSpecSchema.parse({
    source,
    template: { spec: { prompt: 'p', agent: { command: ['a'] } } },
    ...extra,
  }),
});

test('live table triggers: source, next tick or poll, last result, hook URLs when served', () => {
  const now = Date.parse('2026-12-02T01:00:00Z');
  const nightly = trigger('nightly', { schedule: { cron: '0 2 * * *' } });
  const issues = trigger('issues', {
    gitea: { apiURL: 'http://gitea/api/v1', repo: 'o/r', tokenEnv: 'T', webhook: { secretEnv: 'S' } },
  });
  const hook = trigger('hook', { webhook: { forge: 'gitea', secretEnv: 'S' } });
  assert.equal(sourceCell(nightly.spec), 'schedule 0 2 * * *');
  assert.equal(sourceCell(issues.spec), 'gitea o/r');
  const polled = {
    lastPollAt: '2026-12-02T00:59:50Z',
    nextPollAt: '2026-12-02T01:00:30Z',
    itemsSeen: 2,
    tasksActive: 1,
    tasksCreated: 1,
  };
  const cases: Array<[Parameters<typeof nextCell>[0], boolean, string]> = [
    [{ trigger: nightly, status: polled }, true, 'in 30s'],
    [{ trigger: nightly, status: { ...polled, nextPollAt: '2026-12-02T00:59:00Z' } }, true, 'due'],
    [{ trigger: nightly }, true, 'due'],
    [{ trigger: nightly, status: polled }, false, 'only with --watch'],
    [{ trigger: hook }, true, 'on delivery'],
    [{ trigger: trigger('off', { schedule: { cron: '* * * * *' } }, { suspend: true }) }, true, 'suspended'],
  ];
  for (const [line, watching, shown] of cases) assert.equal(nextCell(line, watching, now), shown);
  assert.equal(lastCell(undefined, now), 'not yet');
  assert.equal(lastCell(polled, now), '10s ago: 2 items seen, 1 task created');
  assert.equal(lastCell({ ...polled, lastError: 'HTTP 401' }, now), '10s ago: error: HTTP 401');
  const lines = [{ trigger: nightly }, { trigger: issues }, { trigger: hook }];
  assert.deepEqual(hookLines(lines, undefined), []);
  assert.deepEqual(hookLines(lines, 'http://127.0.0.1:8080/hooks'), [
    'hooks: POST http://127.0.0.1:8080/hooks/default/issues',
    'hooks: POST http://127.0.0.1:8080/hooks/default/hook',
  ]);
  const screen = renderScreen(
    [],
    { triggers: lines, watching: true, hooksUrl: 'http://h/hooks' },
    { write: () => 0 },
    now,
  );
  assert.ok(
    screen.some((l) => /^TRIGGER\s+SOURCE\s+NEXT\s+LAST$/.test(l)),
    screen.join('\n'),
  );
  assert.ok(
    screen.some((l) => /^nightly\s+schedule 0 2 \* \* \*\s+due\s+not yet$/.test(l)),
    screen.join('\n'),
  );
});

test('run end: nothing to run only when triggers and no task; next steps pasteable, for the task worth a look', () => {
  assert.equal(nothingToRun(0, 2), 'nothing to run; 2 triggers are served only with --watch');
  assert.equal(nothingToRun(0, 1), 'nothing to run; 1 trigger is served only with --watch');
  assert.equal(nothingToRun(1, 2), undefined);
  assert.equal(nothingToRun(0, 0), undefined);
  assert.equal(shellWord('examples/demo'), 'examples/demo');
  assert.equal(shellWord("my dir's"), `'my dir'\\''s'`);
  const ok = { task: { name: 'a', namespace: 'default' }, status: { ...emptyStatus(), phase: 'Succeeded' as const } };
  const bad = { task: { name: 'b', namespace: 'team' }, status: { ...emptyStatus(), phase: 'Failed' as const } };
  const lines = nextSteps('episodic', 'my specs', [ok, bad]);
  assert.equal(lines[0], 'Next:');
  assert.match(lines[2], /^ {2}episodic get b 'my specs' -n team --episodes\s{3}/);
  assert.match(lines[3], /^ {2}episodic logs b 'my specs' -n team\s/);
  assert.match(nextSteps('node_modules/.bin/episodic', '.', [ok])[1], /^ {2}node_modules\/\.bin\/episodic get\s{3}/);
  assert.deepEqual(nextSteps('episodic', '.', []), []);
});

test('cannot start: plain words and what to do, by errno; Node words for the rest', () => {
  const field = 'spec.agent.command';
  const at = (file: string | undefined, code: string, extra: object = {}) =>
    cannotStartMessage({ file, code, detail: `spawn ${file} ${code}`, field, cwd: '/ws', cwdExists: true, ...extra });
  const cases: Array<[string, RegExp]> = [
    [
      at('claude', 'ENOENT'),
      /^cannot start claude: not found on PATH — install it, or give spec\.agent\.command its full path$/,
    ],
    [at('./agent.sh', 'ENOENT'), /^cannot start \.\/agent\.sh: no such file — check the path in spec\.agent\.command/],
    [at('claude', 'ENOENT', { cwdExists: false }), /^cannot start claude: its directory \/ws does not exist/],
    [at('./agent.sh', 'EACCES'), /permission denied — make it executable \(chmod \+x \.\/agent\.sh\)/],
    [at('claude', 'EACCES'), /permission denied — the file found on PATH is not executable by this user/],
    [at('./agent.sh', 'ENOEXEC'), /not a program this system can run .* e\.g\. \[node, \.\/agent\.sh\]$/],
    [at('a', 'E2BIG'), /too long for the system — pass the prompt by file or stdin \(spec\.agent\.promptVia\)$/],
    [at('a', 'EAGAIN'), /out of processes or memory for now \(EAGAIN\) — it is retried/],
    [at('a', 'EMFILE'), /too many files are open \(EMFILE\)/],
    [at('a', 'EWHAT'), /^cannot start a: spawn a EWHAT$/],
    [at(undefined, 'ENOENT'), /^cannot start: spec\.agent\.command is empty — give it the command to run$/],
  ];
  for (const [message, expected] of cases) assert.match(message, expected);
});
