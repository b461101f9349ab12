// The report rule (issue 21 §2), table-tested: what a status sequence makes the item show, that nothing is
// rewritten when nothing a person sees changed, that agent text cannot inject markup, and the resume command.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentTaskStatusSchema, type AgentTaskStatus } from '../../controller/api/agent-task-status.ts';
import {
  codeFence,
  codeSpan,
  commentDigest,
  itemReportKey,
  type ReportAction,
  type ReportedState,
  renderReport,
  renderTitle,
  reportActions,
  reportingTasks,
} from '../../controller/reconciler/trigger-report.ts';
import { ITEM_LABEL } from '../../controller/reconciler/trigger-items.ts';
import { resumeCommand, type ResumeCommandInput } from '../../controller/reconciler/trigger-resume.ts';
import { MAX_GRANT } from '../../controller/api/resume.ts';

const now = () => new Date('2026-11-25T22:00:00Z');
const spec = {
  comment: true,
  labels: { running: 'episodic:running', done: 'episodic:done', review: 'episodic:review' },
  pullRequest: { draft: false, titleTemplate: 'Fix #{{item.number}}: {{item.title}}' },
};
const issue = { number: 7, title: 'Broken   build', isPullRequest: false };
const status = (s: Partial<AgentTaskStatus>): AgentTaskStatus => AgentTaskStatusSchema.parse(s);
const step = (index: number, name: string) => ({ index, name, summary: `${index}/4 ${name}` });

test('a status sequence: one comment text per visible change, labels swapped, one publish on success', () => {
  const sequence: Array<[string, AgentTaskStatus, string[]]> = [
    [
      'Running step 1',
      status({ phase: 'Running', episodes: 1, costUSD: 0.1, step: step(1, 'plan') }),
      ['comment', 'labels'],
    ],
    ['same, polled again', status({ phase: 'Running', episodes: 1, costUSD: 0.1, step: step(1, 'plan') }), []],
    [
      'Running step 2',
      status({ phase: 'Running', episodes: 2, costUSD: 0.25, step: step(2, 'implement') }),
      ['comment'],
    ],
    [
      'NeedsReview',
      status({ phase: 'NeedsReview', reason: 'MaxEpisodesReached', message: 'cap hit', episodes: 2 }),
      ['comment', 'labels'],
    ],
    [
      'Succeeded',
      status({ phase: 'Succeeded', reason: 'Completed', episodes: 3, costUSD: 0.5, workspaceChanges: 2 }),
      ['comment', 'labels', 'publish'],
    ],
    [
      'Succeeded again',
      status({ phase: 'Succeeded', reason: 'Completed', episodes: 3, costUSD: 0.5, workspaceChanges: 2 }),
      [],
    ],
  ];
  let last: ReportedState = {};
  const all: ReportAction[][] = [];
  for (const [what, s, kinds] of sequence) {
    const { actions, next } = reportActions({ item: issue, status: s, spec, last, task: 'fix-7', now });
    assert.deepEqual(
      actions.map((a) => a.kind),
      kinds,
      what,
    );
    all.push(actions);
    last = next;
  }
  const comment = (i: number) => all[i].find((a) => a.kind === 'comment');
  assert.match(JSON.stringify(comment(0)), /Step: `1\/4 plan`.*Episodes: 1.*Cost: \$0\.10/);
  assert.match(JSON.stringify(comment(2)), /Step: `2\/4 implement`/);
  assert.deepEqual(all[0][1], {
    kind: 'labels',
    add: ['episodic:running'],
    remove: ['episodic:done', 'episodic:review'],
  });
  assert.deepEqual(all[3][1], {
    kind: 'labels',
    add: ['episodic:review'],
    remove: ['episodic:running', 'episodic:done'],
  });
  assert.deepEqual(all[4][2], {
    kind: 'publish',
    branch: 'episodic/7',
    pullRequest: {
      title: 'Fix #7: Broken build',
      body: 'Work of episodic task `fix-7`: 3 episodes, $0.50.',
      closes: 7,
      draft: false,
      base: undefined,
    },
  });
  assert.deepEqual(last, {
    // A digest of the text last written: status keeps one small entry per task.
    comment: commentDigest((comment(4) as { body: string }).body),
    label: 'episodic:done',
    publishedBranch: 'episodic/7',
    at: '2026-11-25T22:00:00.000Z',
  });
});

test('NeedsReview says why and how to resume; Running shows no reason or message', () => {
  const review = renderReport(
    status({ phase: 'NeedsReview', reason: 'NoProgress', message: 'stuck' }),
    't',
    'maintain',
  );
  assert.match(review, /\*\*NeedsReview\*\*/);
  assert.match(review, /Reason: `NoProgress`/);
  assert.match(review, /```text\nstuck\n```/);
  assert.match(review, /comment `\/episodic resume` \(needs maintain access\)/);
  const running = renderReport(status({ phase: 'Running', reason: 'Old', message: 'old' }), 't');
  assert.doesNotMatch(running, /Old|old|resume/);
});

test('agent text is fenced: no HTML, mention or link escapes; long text is bounded', () => {
  const hostile = '```\n<img src=x onerror=alert(1)> @octocat [click](https://evil.example)\n````';
  const fenced = codeFence(hostile);
  const fence = fenced.split('\n', 1)[0];
  assert.equal(fence, '`````text');
  assert.ok(fenced.endsWith('\n`````'));
  // The inner backtick runs are shorter than the fence, so nothing closes it early.
  assert.ok(!fenced.slice(fence.length, -5).includes('`````'));
  assert.equal(codeSpan('a `tick` @x\nnext'), '``a `tick` @x next``');
  assert.equal(codeSpan('`edge'), '`` `edge ``');
  const big = renderReport(status({ phase: 'Failed', message: 'x'.repeat(50_000) }), 't');
  assert.ok(big.length < 1000, `${big.length}`);
  const body = renderReport(status({ phase: 'Failed', reason: '@team <b>', message: hostile }), 't<script>');
  // Outside fences and code spans nothing of the agent's text is left to render.
  const prose = body.replace(/(`{3,})text\n[\s\S]*?\n\1/g, '').replace(/(`+)[^`].*?\1/g, '');
  assert.doesNotMatch(prose, /[<@[]/);
  assert.match(body, /task `t_script_`/);
  assert.match(body, /Reason: `@team <b>`/);
});

test('publish: none without changes or pullRequest spec, a PR item pushes its own head, titles are one line', () => {
  const done = status({ phase: 'Succeeded', workspaceChanges: 1 });
  const run = (over: object, s = done) =>
    reportActions({ item: issue, status: s, spec, last: {}, task: 't', now, ...over }).actions.filter(
      (a) => a.kind === 'publish',
    );
  assert.deepEqual(run({}, status({ phase: 'Succeeded', workspaceChanges: 0 })), []);
  assert.deepEqual(run({}, status({ phase: 'Failed', workspaceChanges: 3 })), []);
  assert.deepEqual(run({ spec: { comment: true } }), []);
  assert.deepEqual(run({ item: { ...issue, isPullRequest: true, headBranch: 'feature/x' } }), [
    { kind: 'publish', branch: 'feature/x' },
  ]);
  assert.equal(renderTitle('{{item.title}}', { ...issue, title: 'a\nb\r\nc' }), 'a b c');
  assert.equal(renderTitle('{{item.title}}', { ...issue, title: '  ' }), 'episodic #7');
});

test('no labels configured: no label actions; comment off: no comment', () => {
  const { actions } = reportActions({
    item: issue,
    status: status({ phase: 'Running' }),
    spec: {},
    last: {},
    task: 't',
    now,
  });
  assert.deepEqual(actions, []);
});

const cmd = (over: Partial<ResumeCommandInput> = {}): ResumeCommandInput => ({
  comment: { id: 42, author: 'alice', authorIsBot: false, body: '/episodic resume' },
  forge: 'gitea',
  minPermission: 'write',
  permission: 'write',
  phase: 'NeedsReview',
  ...over,
});

test('resume command: permitted users resume once; everyone else gets nothing', () => {
  const table: Array<[string, Partial<ResumeCommandInput>, string]> = [
    ['write user', {}, 'resume'],
    ['admin user', { permission: 'admin' }, 'resume'],
    ['read user', { permission: 'read' }, 'ignore:alice lacks write permission'],
    ['no role', { permission: undefined }, 'ignore:alice lacks write permission'],
    ['maintain needed', { permission: 'write', minPermission: 'maintain' }, 'ignore:alice lacks maintain permission'],
    [
      'bot',
      { comment: { id: 1, author: 'bot', authorIsBot: true, body: '/episodic resume' } },
      'ignore:bots never resume',
    ],
    ['running task', { phase: 'Running' }, 'ignore:task is Running'],
    ['handled', { handledToken: 'gitea-comment-42' }, 'ignore:already handled'],
    [
      'other text',
      { comment: { id: 2, author: 'alice', authorIsBot: false, body: 'please /episodic resume' } },
      'ignore:not a resume command',
    ],
    ['other command', { command: '/agent' }, 'ignore:not a resume command'],
    // The token could not read the role (Gitea: another user's needs a repo admin): wait, only if it matters.
    ['role unreadable', { permission: { unknown: 'needs admin' } }, 'undecided:needs admin'],
    ['role unreadable, running', { permission: { unknown: 'x' }, phase: 'Running' }, 'ignore:task is Running'],
    [
      'role unreadable, handled',
      { permission: { unknown: 'x' }, handledToken: 'gitea-comment-42' },
      'ignore:already handled',
    ],
    [
      'bad count',
      { comment: { id: 3, author: 'alice', authorIsBot: false, body: '/episodic resume lots' } },
      'ignore:not a resume command',
    ],
  ];
  for (const [what, over, want] of table) {
    const d = resumeCommand(cmd(over));
    assert.equal(d.kind === 'resume' ? 'resume' : `${d.kind}:${d.why}`, want, what);
  }
  assert.deepEqual(resumeCommand(cmd()), {
    kind: 'resume',
    request: { token: 'gitea-comment-42', by: 'gitea:alice' },
  });
  const withGrant = resumeCommand(
    cmd({ comment: { id: 9, author: 'al<i>ce', authorIsBot: false, body: '/episodic resume 5\nthanks' } }),
  );
  assert.deepEqual(withGrant, {
    kind: 'resume',
    request: { token: 'gitea-comment-9', by: 'gitea:al_i_ce', episodes: 5 },
  });
  // A comment grants what `episodic resume --episodes` may (api/resume.ts MAX_GRANT), not one more.
  const grant = (n: number) =>
    resumeCommand(cmd({ comment: { id: 9, author: 'alice', authorIsBot: false, body: `/episodic resume ${n}` } }));
  const most = grant(MAX_GRANT);
  assert.equal(most.kind === 'resume' ? most.request.episodes : most.why, MAX_GRANT);
  assert.equal(grant(MAX_GRANT + 1).kind, 'ignore');
});

test("a re-run reports in the item's one comment: the key is the first run's, only the newest run reports", () => {
  assert.equal(itemReportKey('fix', 7), 'fix/fix-7', 'the key comments of first runs always had');
  const t = (name: string, item?: number) => ({
    name,
    labels: (item ? { [ITEM_LABEL]: String(item) } : {}) as Record<string, string>,
  });
  const tasks = [t('fix-7'), t('fix-7-2', 7), t('fix-7', 7), t('fix-8', 8), t('fix-7-10', 7), t('fix-x', 0)];
  assert.deepEqual(
    reportingTasks('fix', tasks).map((r) => [r.number, r.task.name]),
    [
      [7, 'fix-7-10'],
      [8, 'fix-8'],
    ],
  );
});
