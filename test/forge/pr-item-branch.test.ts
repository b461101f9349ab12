// Where a PR item's work goes (issue 21 §2): its own head branch when that branch is in the trigger's repo;
// a PR from a fork (or from a fork since deleted) gets no task and says why, rather than the episodes
// pushing a same-named branch of the base repo that the PR never sees.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentTriggerSpecSchema } from '../../controller/api/agent-trigger.ts';
import { parsePull } from '../../controller/forge/shapes.ts';
import { itemBranch, prBranchProblem, refusalComment } from '../../controller/reconciler/trigger-report-plan.ts';

const REPO = 'acme/app';
const pull = (head: Record<string, unknown> | undefined) =>
  parsePull({ number: 5, title: 'A feature', state: 'open', user: { login: 'alice' }, head });

const trigger = {
  spec: AgentTriggerSpecSchema.parse({
    source: { gitea: { apiURL: 'http://forge', repo: REPO, kind: 'pullRequests', labels: ['agent'] } },
    report: { comment: true, pullRequest: {} },
    template: {
      spec: {
        prompt: 'p',
        agent: { command: ['agent'] },
        workspace: { git: { url: 'http://forge/acme/app.git', ref: 'main' } },
      },
    },
  }),
};
const rendered = { prompt: 'p', workspace: { git: { url: 'http://forge/acme/app.git', ref: 'main' } } };

describe('a PR item’s branch', () => {
  it('reads where the head lives: its repo, "" when the fork is gone, nothing when not sent', () => {
    assert.equal(pull({ ref: 'feature', repo: { full_name: 'bob/app' } }).headRepo, 'bob/app');
    assert.equal(pull({ ref: 'feature', repo: null }).headRepo, '');
    assert.equal(pull({ ref: 'feature' }).headRepo, undefined);
  });

  it('is the PR’s own branch when it is in the trigger’s repo (names compared as the forge does)', () => {
    const listed = pull(undefined); // an issue list's entry carries no head: the PR is read
    assert.deepEqual(itemBranch(rendered, trigger, listed, undefined, true), { needPull: 5 });
    const read = pull({ ref: 'feature', repo: { full_name: 'Acme/App' } });
    const item = itemBranch(rendered, trigger, listed, read, true);
    assert.ok('spec' in item);
    assert.deepEqual(item.spec.workspace, { git: { url: 'http://forge/acme/app.git', ref: 'feature' } });
    assert.deepEqual(itemBranch(rendered, trigger, listed, undefined, false), {
      refused: "the PR's branch is unknown without a forge client",
    });
  });

  it('a fork’s branch is refused: no spec, so no task and no push to the base repo', () => {
    const fork = pull({ ref: 'feature', repo: { full_name: 'bob/app' } });
    const item = itemBranch(rendered, trigger, fork, undefined, true); // a webhook's item carries the head: no read
    assert.deepEqual(item, {
      refused: "cannot push to a fork's branch (the PR's head is in bob/app, not acme/app)",
    });
    const listed = itemBranch(rendered, trigger, pull(undefined), fork, true);
    assert.deepEqual(listed, item, 'the same when the PR is read');
  });

  it('a deleted fork and an unusable branch name are refused too', () => {
    assert.match(prBranchProblem({ headBranch: 'feature', headRepo: '' }, REPO) ?? '', /a deleted fork/);
    assert.match(prBranchProblem({ headBranch: '-x', headRepo: REPO }, REPO) ?? '', /not a usable branch name/);
    assert.equal(prBranchProblem({ headBranch: 'feature' }, REPO), undefined, 'no repo sent: the base repo');
  });

  it('the refusal is said in the item’s report comment, as inline code', () => {
    const body = refusalComment('prt-5', "cannot push to a fork's branch (the PR's head is in bob/app, not acme/app)");
    assert.equal(
      body,
      "**episodic** task `prt-5`: **not started**\n\n- Reason: `cannot push to a fork's branch (the PR's head is in bob/app, not acme/app)`",
    );
  });
});
