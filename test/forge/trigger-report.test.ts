// The report carrier (report-task.ts reportTask) end to end: a task's statuses reported to a real Gitea
// keep one comment edited in place, swap the labels, and on Succeeded push episodic/N from a local git
// workspace and open one PR closing the issue; a second Succeeded changes nothing. The same sequence against
// the GitHub stand-in, asserting the requests made. A `/episodic resume` comment reaches the CLI's path.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { AgentTaskStatusSchema, type AgentTaskStatus } from '../../controller/api/agent-task-status.ts';
import { GiteaForge } from '../../controller/forge/gitea.ts';
import { GitHubForge } from '../../controller/forge/github.ts';
import { type ReportWorkspace, reportTask } from '../../controller/sources/triggers/report-task.ts';
import { handleResumeComment, localResumeRequester } from '../../controller/sources/triggers/resume-command.ts';
import { type Forge, reportMarker } from '../../controller/forge/types.ts';
import type { ReportedState } from '../../controller/reconciler/trigger-report.ts';
import { readResumeRequest } from '../../controller/sources/local/resume-requests.ts';
import { resumeRequestPath } from '../../controller/util/state-layout.ts';
import { type Gitea, type GiteaAccount, gitAuthEnv, startGitea } from '../support/gitea.ts';
import { GitHubStandin } from '../support/github-standin.ts';

const execFileAsync = promisify(execFile);
const now = () => new Date('2026-11-25T22:30:00Z');
const spec = {
  comment: true,
  labels: { running: 'episodic:running', done: 'episodic:done', review: 'episodic:review' },
  pullRequest: { draft: false, titleTemplate: 'episodic: {{item.title}}' },
};
const status = (s: Partial<AgentTaskStatus>): AgentTaskStatus => AgentTaskStatusSchema.parse(s);
const SEQUENCE: Array<[string, AgentTaskStatus]> = [
  [
    'Running',
    status({ phase: 'Running', episodes: 1, costUSD: 0.1, step: { index: 1, name: 'plan', summary: '1/4 plan' } }),
  ],
  [
    'Running',
    status({
      phase: 'Running',
      episodes: 2,
      costUSD: 0.2,
      step: { index: 2, name: 'implement', summary: '2/4 implement' },
    }),
  ],
  [
    'NeedsReview',
    status({
      phase: 'NeedsReview',
      reason: 'MaxEpisodesReached',
      message: 'ran out <b>@alice</b>',
      episodes: 2,
      costUSD: 0.2,
    }),
  ],
  ['Succeeded', status({ phase: 'Succeeded', reason: 'Completed', episodes: 3, costUSD: 0.3, workspaceChanges: 1 })],
  ['Succeeded', status({ phase: 'Succeeded', reason: 'Completed', episodes: 3, costUSD: 0.3, workspaceChanges: 1 })],
];

/** Reports each status in turn; after each, `check` sees the item. Returns what each call did. */
async function runSequence(
  forge: Forge,
  item: { number: number; title: string },
  workspace: ReportWorkspace,
  check: (i: number, last: ReportedState) => Promise<void>,
) {
  let last: ReportedState = {};
  const dones = [];
  for (const [i, [, s]] of SEQUENCE.entries()) {
    const out = await reportTask({
      forge,
      item: { ...item, isPullRequest: false },
      task: `fix-${item.number}`,
      status: s,
      spec,
      last,
      workspace,
      now,
    });
    last = out.next;
    dones.push(out.done);
    await check(i, last);
  }
  return dones;
}

async function commitWork(dir: string, env: NodeJS.ProcessEnv) {
  const git = (args: string[]) => execFileAsync('git', args, { cwd: dir, env });
  await writeFile(path.join(dir, 'fix.txt'), 'fixed\n');
  await git(['add', 'fix.txt']);
  await git(['-c', 'user.name=Agent', '-c', 'user.email=agent@example.invalid', 'commit', '-q', '-m', 'fix']);
  return git;
}

describe('reportTask against a real Gitea', () => {
  const owner = 'episodic-admin';
  const repo = 'reports';
  let gitea: Gitea;
  let robot: GiteaAccount;
  let alice: GiteaAccount;
  let reader: GiteaAccount;
  let forge: GiteaForge;

  before(async () => {
    gitea = await startGitea();
    [robot, alice, reader] = await Promise.all(['robot', 'alice', 'reader'].map((n) => gitea.createUser(n)));
    await gitea.createRepo(owner, repo, { private: true, autoInit: true });
    await gitea.addCollaborator(owner, repo, robot.name, 'admin');
    await gitea.addCollaborator(owner, repo, alice.name, 'write');
    await gitea.addCollaborator(owner, repo, reader.name, 'read');
    forge = new GiteaForge({ apiURL: gitea.url, repo: `${owner}/${repo}`, token: robot.token });
  });
  after(async () => {
    await gitea?.stop();
  });

  it('one comment edited in place, labels swapped, one branch and one PR closing the issue', async () => {
    const issue = await gitea.createIssue(owner, repo, { title: 'Widget is broken' }, alice.token);
    const work = await mkdtemp(path.join(os.tmpdir(), 'episodic-report-'));
    try {
      const env = { ...process.env, ...gitAuthEnv(robot.name, robot.token) };
      await execFileAsync('git', ['clone', '-q', gitea.cloneUrl(owner, repo), '.'], { cwd: work, env });
      const git = await commitWork(work, env);
      const head = (await git(['rev-parse', 'HEAD'])).stdout.trim();
      const workspace = {
        workspace: work,
        remoteUrl: gitea.cloneUrl(owner, repo),
        credentials: { username: robot.name, token: robot.token },
        defaultBase: 'main',
      };
      const seen: Array<{ ids: number[]; body: string; labels: string[] }> = [];
      const dones = await runSequence(forge, issue, workspace, async () => {
        const comments = (await gitea.listComments(owner, repo, issue.number)).filter((c) => c.user.login === 'robot');
        const labels = (await gitea.getIssue(owner, repo, issue.number)).labels.map((l) => l.name);
        seen.push({ ids: comments.map((c) => c.id), body: comments[0]?.body ?? '', labels });
      });
      const id = seen[0].ids[0];
      for (const s of seen) assert.deepEqual(s.ids, [id], 'exactly one report comment, the same one');
      for (const s of seen) assert.ok(s.body.startsWith(`${reportMarker(`fix-${issue.number}`)}\n`));
      assert.match(seen[0].body, /\*\*Running\*\*[\s\S]*Step: `1\/4 plan`[\s\S]*Episodes: 1\n- Cost: \$0\.10/);
      assert.match(seen[1].body, /Step: `2\/4 implement`[\s\S]*Episodes: 2\n- Cost: \$0\.20/);
      assert.match(seen[2].body, /\*\*NeedsReview\*\*[\s\S]*Reason: `MaxEpisodesReached`/);
      assert.match(seen[2].body, /```text\nran out <b>@alice<\/b>\n```/);
      assert.match(seen[2].body, /comment `\/episodic resume`/);
      assert.match(seen[3].body, /\*\*Succeeded\*\*[\s\S]*Reason: `Completed`/);
      assert.equal(seen[4].body, seen[3].body);
      assert.deepEqual(
        seen.map((s) => s.labels),
        [['episodic:running'], ['episodic:running'], ['episodic:review'], ['episodic:done'], ['episodic:done']],
      );
      assert.deepEqual(
        dones.map((d) => d.map((x) => (x.kind === 'comment' ? `comment:${x.action}` : x.kind))),
        [
          ['comment:created', 'labels'],
          ['comment:updated'],
          ['comment:updated', 'labels'],
          ['comment:updated', 'labels', 'publish'],
          [],
        ],
      );
      const pulls = await gitea.api<Array<{ title: string; body: string; head: { ref: string; sha: string } }>>(
        'GET',
        `/repos/${owner}/${repo}/pulls`,
        { query: { state: 'all' } },
      );
      assert.equal(pulls.length, 1);
      assert.equal(pulls[0].title, 'episodic: Widget is broken');
      assert.match(pulls[0].body, new RegExp(`\\n\\nCloses #${issue.number}$`));
      assert.deepEqual([pulls[0].head.ref, pulls[0].head.sha], [`episodic/${issue.number}`, head]);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });

  it('a /episodic resume comment from a write user makes the local resume request; a read user makes none', async () => {
    const issue = await gitea.createIssue(owner, repo, { title: 'Stuck' }, alice.token);
    const state = mkdtempSync(path.join(os.tmpdir(), 'episodic-resume-'));
    try {
      mkdirSync(path.join(state, 'status', 'default'), { recursive: true });
      const stored = {
        ...{ namespace: 'default', name: 'stuck', generation: 1, specHash: 'h' },
        status: { phase: 'NeedsReview', reason: 'MaxEpisodesReached' },
      };
      writeFileSync(path.join(state, 'status', 'default', 'stuck.json'), JSON.stringify(stored));
      const request = localResumeRequester(state, 'default', 'stuck');
      const file = resumeRequestPath(state, 'default', 'stuck');
      await gitea.comment(owner, repo, issue.number, '/episodic resume', reader.token);
      await gitea.comment(owner, repo, issue.number, '/episodic resume 3', alice.token);
      const listed = await forge.listComments({ number: issue.number });
      assert.equal(listed.kind, 'listed');
      const [byReader, byAlice] = listed.kind === 'listed' ? listed.entries : [];
      const base = { forge, minPermission: 'write' as const, phase: 'NeedsReview' as const, request };
      const refused = await handleResumeComment({ ...base, comment: byReader });
      assert.deepEqual(refused, { kind: 'ignore', why: 'reader lacks write permission' });
      assert.equal(readResumeRequest(file, assert.fail), undefined, 'no request file for a read user');
      const accepted = await handleResumeComment({ ...base, comment: byAlice });
      assert.equal(accepted.kind, 'resume');
      const written = readResumeRequest(file, assert.fail);
      assert.deepEqual(written, { token: `gitea-comment-${byAlice.id}`, by: 'gitea:alice', episodes: 3 });
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  });
});

describe('reportTask against the GitHub stand-in', () => {
  const TOKEN = 'ghp_reportStandinToken0123456789';
  let gh: GitHubStandin;
  before(async () => {
    gh = await new GitHubStandin({ token: TOKEN, login: 'episodic-bot', repo: 'octo/widgets' }).start();
  });
  after(async () => {
    await gh?.stop();
  });

  it('edits one comment, swaps labels, and opens one PR closing the issue', async () => {
    const issue = gh.addIssue({ title: 'Widget is broken', labels: [] });
    const forge = new GitHubForge({ apiURL: gh.url, repo: 'octo/widgets', token: TOKEN, now });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'episodic-report-gh-'));
    try {
      // GitHub's git side is a local bare repository: the push is real, the API is the stand-in's.
      const remote = path.join(dir, 'remote.git');
      const work = path.join(dir, 'work');
      await execFileAsync('git', ['init', '-q', '--bare', '-b', 'main', remote]);
      await execFileAsync('git', ['init', '-q', '-b', 'main', work]);
      const git = await commitWork(work, process.env);
      const head = (await git(['rev-parse', 'HEAD'])).stdout.trim();
      const workspace = {
        workspace: work,
        remoteUrl: remote,
        credentials: { username: 'x-access-token', token: TOKEN },
        defaultBase: 'main',
      };
      const bodies: string[] = [];
      gh.requests.length = 0;
      const dones = await runSequence(forge, issue, workspace, async () => {
        bodies.push(
          gh.comments
            .filter((c) => c.issue === issue.number)
            .map((c) => c.body)
            .join('|'),
        );
      });
      assert.equal(gh.comments.length, 1);
      assert.match(bodies[1], /2\/4 implement/);
      assert.match(bodies[2], /NeedsReview/);
      assert.equal(bodies[4], bodies[3]);
      const writes = gh.requests.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.url.split('?')[0]}`);
      const n = issue.number;
      assert.equal(writes.filter((w) => w === `POST /repos/octo/widgets/issues/${n}/comments`).length, 1);
      assert.equal(writes.filter((w) => /^PATCH \/repos\/octo\/widgets\/issues\/comments\//.test(w)).length, 3);
      assert.equal(writes.filter((w) => w === 'POST /repos/octo/widgets/pulls').length, 1);
      const pr = gh.requests.find((r) => r.method === 'POST' && r.url.startsWith('/repos/octo/widgets/pulls'));
      assert.deepEqual(pr?.body, {
        title: 'episodic: Widget is broken',
        head: `episodic/${n}`,
        base: 'main',
        body: `Work of episodic task \`fix-${n}\`: 3 episodes, $0.30.\n\nCloses #${n}`,
        draft: false,
      });
      assert.equal(dones[4].length, 0, 'a second Succeeded makes no request of its own');
      const pushed = await execFileAsync('git', ['rev-parse', `refs/heads/episodic/${n}`], { cwd: remote });
      assert.equal(pushed.stdout.trim(), head);
      assert.deepEqual(gh.issues.find((i) => i.number === n)?.labels, ['episodic:done']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
