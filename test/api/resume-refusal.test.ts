// "Only a NeedsReview task can be resumed": the one rule `episodic resume` and both consoles answer with.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resumeRefusal } from '../../controller/api/resume.ts';

test('resumeRefusal: NeedsReview may be resumed; any other phase is refused, naming it and its reason', () => {
  assert.equal(resumeRefusal('ns/t', 'NeedsReview', 'CircuitOpen'), undefined);
  assert.equal(resumeRefusal('ns/t', 'Running', undefined), 'ns/t is Running: only a NeedsReview task can be resumed');
  assert.equal(
    resumeRefusal('ns/t', 'Failed', 'BudgetExceeded'),
    'ns/t is Failed (BudgetExceeded): only a NeedsReview task can be resumed',
  );
  assert.equal(resumeRefusal('ns/t', undefined, undefined), 'ns/t is Pending: only a NeedsReview task can be resumed');
});
