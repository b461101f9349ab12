// Table test of the rule that says which AgentBudgets hold a task after a pass (their status lists it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { budgetHoldsTask } from '../../controller/reconciler/budget.ts';

const status = (over: Partial<AgentTaskStatus>): AgentTaskStatus => ({ ...emptyStatus(), ...over });
const stopped = status({ phase: 'NeedsReview', reason: 'BudgetExceeded' });
const waiting = status({ phase: 'Waiting', reason: 'BudgetWindow' });
const running = status({ phase: 'Running', reason: 'EpisodeRunning' });

const cases: Array<{
  name: string;
  heldBy: string[] | undefined;
  status: AgentTaskStatus;
  heldBefore: boolean;
  holds: boolean;
}> = [
  { name: 'the pass says it holds the task', heldBy: ['team'], status: waiting, heldBefore: false, holds: true },
  { name: 'another budget holds it', heldBy: ['other'], status: waiting, heldBefore: false, holds: false },
  { name: 'nothing holds it any more', heldBy: undefined, status: running, heldBefore: true, holds: false },
  {
    name: 'a total budget stopped it: held while it stays stopped',
    heldBy: undefined,
    status: stopped,
    heldBefore: true,
    holds: true,
  },
  {
    name: 'stopped by another budget or a spec cap: not this one',
    heldBy: undefined,
    status: stopped,
    heldBefore: false,
    holds: false,
  },
  {
    name: 'NeedsReview for another reason lets it go',
    heldBy: undefined,
    status: status({ phase: 'NeedsReview', reason: 'MaxEpisodesReached' }),
    heldBefore: true,
    holds: false,
  },
  {
    name: 'BudgetExceeded re-opened (Pending) lets it go',
    heldBy: undefined,
    status: status({ phase: 'Pending', reason: 'BudgetExceeded' }),
    heldBefore: true,
    holds: false,
  },
];

for (const c of cases) {
  test(`budget hold: ${c.name} → ${c.holds ? 'held' : 'not held'}`, () => {
    assert.equal(budgetHoldsTask('team', c.heldBy, c.status, c.heldBefore), c.holds);
  });
}
