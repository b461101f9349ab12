// spec.integrate's schema: defaults, and the errors naming the field for a spec the queue could not serve.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';

const base = { prompt: 'x', agent: { command: ['agent'] } };
const git = { git: { url: 'origin.git', ref: 'work/a' } };
const issues = (spec: unknown) =>
  (AgentTaskSpecSchema.safeParse(spec).error?.issues ?? []).map((i) => `${i.path.join('.')}: ${i.message}`);

test('integrate: defaults (no gates, one resolution episode)', () => {
  const spec = AgentTaskSpecSchema.parse({ ...base, workspace: git, integrate: { into: 'main', queue: 'q' } });
  assert.deepEqual(spec.integrate, { into: 'main', queue: 'q', gates: [], onConflict: { episodes: 1 } });
});

test('integrate: needs a git workspace, a ref other than into, a label queue and a valid branch', () => {
  assert.deepEqual(issues({ ...base, workspace: 'ws', integrate: { into: 'main', queue: 'q' } }), [
    'integrate: needs a git workspace (workspace.git): the branch to integrate',
  ]);
  assert.deepEqual(issues({ ...base, workspace: git, integrate: { into: 'refs/heads/work/a', queue: 'q' } }), [
    'integrate.into: must differ from workspace.git.ref',
  ]);
  assert.match(
    issues({ ...base, workspace: git, integrate: { into: 'main', queue: 'Q Q' } })[0] ?? '',
    /^integrate\.queue: /,
  );
  assert.match(
    issues({ ...base, workspace: git, integrate: { into: '-x', queue: 'q' } })[0] ?? '',
    /^integrate\.into: /,
  );
  assert.match(
    issues({ ...base, workspace: git, integrate: { into: 'main', queue: 'q', onConflict: { episodes: 11 } } })[0] ?? '',
    /^integrate\.onConflict\.episodes: /,
  );
});
