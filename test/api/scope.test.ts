// scope.paths globs stay inside the workspace: `..` and absolute paths are refused, naming the field.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ScopeSchema } from '../../controller/api/scope.ts';
import { describeIssues } from '../../controller/api/validate.ts';

describe('scope.paths', () => {
  const problems = (paths: string[]) => {
    const parsed = ScopeSchema.safeParse({ paths });
    return parsed.success ? [] : describeIssues(parsed.error, 'spec.scope');
  };
  it('accepts globs inside the workspace', () => assert.deepEqual(problems(['src/**', '*.md']), []));
  for (const bad of ['../outside/**', 'src/../../x', '/etc/**', 'C:/x'])
    it(`refuses ${bad}, naming the field`, () => {
      const found = problems(['src/**', bad]);
      assert.equal(found.length, 1, found.join('\n'));
      assert.match(found[0], /^spec\.scope\.paths\[1\]: must be a relative path inside the workspace/);
    });
});
