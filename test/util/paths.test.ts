import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isInside } from '../../controller/util/paths.ts';

test('isInside: a name that starts with two dots is inside; a step up is not', () => {
  assert.equal(isInside('/r', '/r'), true);
  assert.equal(isInside('/r', '/r/..data/task.yaml'), true);
  assert.equal(isInside('/r', '/r/a/..'), true);
  assert.equal(isInside('/r', '/'), false);
  assert.equal(isInside('/r', '/r2'), false);
  assert.equal(isInside('/r', '/other/x'), false);
});
