// Table tests of dependencies as facts: what the loop reads of a dependency, and what its dependent makes of it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus, Phase } from '../../controller/api/agent-task.ts';
import { ResumeStatusSchema } from '../../controller/api/resume.ts';
import { dependencyFact, judgeDependencies } from '../../controller/reconciler/dependencies.ts';
import type { DependencyFact, DependencyVerdict } from '../../controller/reconciler/dependencies.ts';

const scheduled = ResumeStatusSchema.parse({ nextAutoResumeAt: '2026-11-22T12:01:00.000Z' });
const status = (over: Partial<AgentTaskStatus>): AgentTaskStatus => ({ ...emptyStatus(), ...over });

const facts: Array<{ name: string; status: AgentTaskStatus | undefined; fact: DependencyFact }> = [
  { name: 'no status yet', status: undefined, fact: { phase: 'Pending', awaitingAutoResume: false } },
  {
    name: 'Succeeded',
    status: status({ phase: 'Succeeded' }),
    fact: { phase: 'Succeeded', awaitingAutoResume: false },
  },
  {
    name: 'NeedsReview, nothing scheduled',
    status: status({ phase: 'NeedsReview' }),
    fact: { phase: 'NeedsReview', awaitingAutoResume: false },
  },
  {
    name: 'NeedsReview with an auto-resume scheduled',
    status: status({ phase: 'NeedsReview', resume: scheduled }),
    fact: { phase: 'NeedsReview', awaitingAutoResume: true },
  },
  {
    name: 'a schedule left on a task that is no longer NeedsReview',
    status: status({ phase: 'Pending', resume: scheduled }),
    fact: { phase: 'Pending', awaitingAutoResume: false },
  },
];

for (const c of facts) {
  test(`dependency fact: ${c.name}`, () => {
    assert.deepEqual(dependencyFact(c.status), c.fact);
  });
}

const dep = (phase: Phase, awaitingAutoResume = false): DependencyFact => ({ phase, awaitingAutoResume });

const verdicts: Array<{ name: string; facts: Record<string, DependencyFact | undefined>; verdict: DependencyVerdict }> =
  [
    { name: 'all succeeded → ready', facts: { a: dep('Succeeded'), b: dep('Succeeded') }, verdict: { kind: 'ready' } },
    {
      name: 'one still running → pending on it',
      facts: { a: dep('Succeeded'), b: dep('Running') },
      verdict: { kind: 'pending', waitingOn: ['b'] },
    },
    {
      name: 'a missing one → pending on it',
      facts: { a: dep('Succeeded') },
      verdict: { kind: 'pending', waitingOn: ['b'] },
    },
    {
      name: 'Failed, Skipped and NeedsReview fail their dependents',
      facts: { a: dep('Failed'), b: dep('Skipped') },
      verdict: { kind: 'failed', failed: ['a', 'b'] },
    },
    {
      name: 'NeedsReview with no auto-resume scheduled → failed',
      facts: { a: dep('NeedsReview'), b: dep('Succeeded') },
      verdict: { kind: 'failed', failed: ['a'] },
    },
    {
      name: 'NeedsReview awaiting its auto-resume → its dependents wait',
      facts: { a: dep('NeedsReview', true), b: dep('Succeeded') },
      verdict: { kind: 'pending', waitingOn: ['a'] },
    },
    {
      name: 'a failed one wins over one awaiting an auto-resume',
      facts: { a: dep('NeedsReview', true), b: dep('Failed') },
      verdict: { kind: 'failed', failed: ['b'] },
    },
  ];

for (const c of verdicts) {
  test(`dependencies: ${c.name}`, () => {
    assert.deepEqual(judgeDependencies(['a', 'b'], c.facts), c.verdict);
  });
}
