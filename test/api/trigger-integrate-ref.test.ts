// A trigger template's integrate.into is checked against the ref each item's task gets (README "Merge queue"):
// with report.pullRequest every task works on its item's branch (episodic/NUMBER, a PR's head), so `into`
// may be the template's own ref; without it the task keeps the template's ref, which `into` must differ from.
// A PR item whose head is `into` gets no task (it would be integrated into itself).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentTriggerSpecSchema } from '../../controller/api/agent-trigger.ts';
import { parsePull } from '../../controller/forge/shapes.ts';
import { itemBranch } from '../../controller/reconciler/trigger-report-plan.ts';

const git = { git: { url: 'http://forge/acme/app.git', ref: 'main' } };
const triggerSpec = (into: string, report: Record<string, unknown> | undefined, kind = 'issues') => ({
  source: { gitea: { apiURL: 'http://forge', repo: 'acme/app', kind, labels: ['agent'] } },
  ...(report ? { report } : {}),
  template: { spec: { prompt: 'p', agent: { command: ['agent'] }, workspace: git, integrate: { into, queue: 'q' } } },
});
const issues = (spec: unknown) =>
  (AgentTriggerSpecSchema.safeParse(spec).error?.issues ?? []).map((i) => `${i.path.join('.')}: ${i.message}`);

describe("a trigger template's integrate.into against the ref its item's task gets", () => {
  it('report.pullRequest: into may be the template ref (each task works on episodic/NUMBER)', () => {
    assert.deepEqual(issues(triggerSpec('main', { pullRequest: {} })), []);
    assert.deepEqual(issues(triggerSpec('refs/heads/main', { comment: true, pullRequest: { base: 'main' } })), []);
  });

  it("report.pullRequest: into may not be an item's branch", () => {
    assert.deepEqual(issues(triggerSpec('episodic/7', { pullRequest: {} })), [
      "template.spec.integrate.into: must not be an item's branch (episodic/NUMBER): each item's task works on its own",
    ]);
  });

  it("without report.pullRequest the task keeps the template's ref: into equal to it is refused", () => {
    const refused = ['template.spec.integrate.into: must differ from workspace.git.ref'];
    assert.deepEqual(issues(triggerSpec('main', undefined)), refused);
    assert.deepEqual(issues(triggerSpec('main', { comment: true })), refused);
    assert.deepEqual(issues(triggerSpec('release', { comment: true })), []);
  });

  it("a PR item whose head is into gets no task; another head is the task's ref", () => {
    const trigger = { spec: AgentTriggerSpecSchema.parse(triggerSpec('main', { pullRequest: {} }, 'pullRequests')) };
    const rendered = { prompt: 'p', workspace: git, integrate: { into: 'main', queue: 'q' } };
    const pr = (ref: string) =>
      parsePull({
        number: 5,
        title: 'x',
        state: 'open',
        user: { login: 'a' },
        head: { ref, repo: { full_name: 'acme/app' } },
      });
    assert.deepEqual(itemBranch(rendered, trigger, pr('main'), undefined, true), {
      refused: "the PR's head is the merge queue's `into` (main): it cannot be integrated into itself",
    });
    const ok = itemBranch(rendered, trigger, pr('feature'), undefined, true);
    assert.ok('spec' in ok);
    assert.deepEqual(ok.spec.workspace, { git: { ...git.git, ref: 'feature' } });
  });
});
