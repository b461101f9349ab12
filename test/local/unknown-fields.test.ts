// A typo must never silently lift a cap: unknown spec fields are errors that name the field and the one it
// probably means, locally (validate and run) and on a cluster (the apiserver's strict field validation).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateSpec } from '../../controller/api/validate.ts';
import { readStatus, runCli, specDir } from '../support/local.ts';

const base = { prompt: 'p', agent: { command: ['agent'] } };

const typos: Array<[Record<string, unknown>, string]> = [
  [{ ...base, limits: { maxEpisode: 3 } }, 'spec.limits.maxEpisode: unknown field (did you mean "maxEpisodes"?)'],
  [{ ...base, limits: { maxCostUsd: 1 } }, 'spec.limits.maxCostUsd: unknown field (did you mean "maxCostUSD"?)'],
  [{ ...base, agnet: {} }, 'spec.agnet: unknown field (did you mean "agent"?)'],
  [{ ...base, completion: { promis: 'DONE' } }, 'spec.completion.promis: unknown field (did you mean "promise"?)'],
  [{ ...base, dependOn: ['x'] }, 'spec.dependOn: unknown field (did you mean "dependsOn"?)'],
  [
    { ...base, agent: { command: ['a'], env: [{ name: 'A', vaule: 'b' }] } },
    'spec.agent.env[0].vaule: unknown field (did you mean "value"?)',
  ],
  [
    { ...base, workspace: { git: { url: 'u', reff: 'main' } } },
    'spec.workspace.git.reff: unknown field (did you mean "ref"?)',
  ],
  [
    { ...base, breaker: { noProgress: 2 } },
    'spec.breaker.noProgress: unknown field (did you mean "noProgressEpisodes"?)',
  ],
  [{ ...base, colour: 'red' }, 'spec.colour: unknown field'],
  [
    { ...base, agent: { command: ['a'], pricing: { inputPerMTok: 1, outputPerMTok: 2, inputPerMtok: 3 } } },
    'spec.agent.pricing.inputPerMtok: unknown field (did you mean "inputPerMTok"?)',
  ],
];

for (const [spec, message] of typos) {
  test(`unknown field: ${message}`, () => {
    const r = validateSpec(spec);
    assert.equal(r.ok, false);
    assert.ok(!r.ok && r.errors.includes(message), JSON.stringify(!r.ok && r.errors));
  });
}

test('run: a typo in a cap fails that task with the field named; the task beside it still runs', async () => {
  const dir = specDir([
    {
      name: 'typo',
      spec: { limits: { maxEpisode: 3, episodeTimeoutSeconds: 30 } },
      script: { default: { mode: 'success' } },
    },
    { name: 'good', script: { default: { mode: 'success' } } },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1);
  assert.equal(readStatus(dir, 'typo')?.status.reason, 'InvalidSpec');
  assert.match(
    readStatus(dir, 'typo')?.status.message ?? '',
    /spec\.limits\.maxEpisode: unknown field \(did you mean "maxEpisodes"\?\)/,
  );
  assert.equal(readStatus(dir, 'typo')?.status.episodes, 0, 'nothing ran on a spec that does not say what it means');
  assert.equal(readStatus(dir, 'good')?.status.phase, 'Succeeded');
  const validate = await runCli(['validate', `${dir}/typo.yaml`]);
  assert.notEqual(validate.code, 0);
  assert.match(
    validate.stdout + validate.stderr,
    /spec\.limits\.maxEpisode: unknown field \(did you mean "maxEpisodes"\?\)/,
  );
});
