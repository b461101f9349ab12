// Table tests for what of the controller's environment a local agent inherits (issue 28): every variable
// but those a spec names as a secret (tokenEnv, secretEnv, any *Env field), unless the task asks by name.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentBaseEnv, secretEnvNames } from '../../controller/api/agent-env.ts';

test('secretEnvNames: tokenEnv, webhook secretEnv and nested *Env fields; not other strings or bad names', () => {
  const forge = { source: { gitea: { repo: 'a/b', tokenEnv: 'GITEA_TOKEN', webhook: { secretEnv: 'HOOK_SECRET' } } } };
  const hook = { source: { webhook: { forge: 'github', secretEnv: 'GH_HOOK', tokenEnv: 'GH_TOKEN' } } };
  const other = { template: { spec: { prompt: 'tokenEnv', agent: { env: [{ name: 'PLAIN', value: 'x' }] } } } };
  const odd = { tokenEnv: 'not a name', undefinedEnv: undefined, deep: [{ fooEnv: 'LISTED' }] };
  assert.deepEqual([...secretEnvNames([forge, hook, other, odd, undefined])].sort(), [
    'GH_HOOK',
    'GH_TOKEN',
    'GITEA_TOKEN',
    'HOOK_SECRET',
    'LISTED',
  ]);
});

const cases: Array<{ name: string; withheld: string[]; asked: string[]; kept: string[] }> = [
  { name: 'nothing withheld: all of it', withheld: [], asked: [], kept: ['GITEA_TOKEN', 'HOME', 'PATH'] },
  { name: 'a secret name is left out', withheld: ['GITEA_TOKEN'], asked: [], kept: ['HOME', 'PATH'] },
  {
    name: 'unless the task asks for it by name',
    withheld: ['GITEA_TOKEN'],
    asked: ['GITEA_TOKEN'],
    kept: ['GITEA_TOKEN', 'HOME', 'PATH'],
  },
  {
    name: 'asking for another name brings back none',
    withheld: ['GITEA_TOKEN'],
    asked: ['PATH'],
    kept: ['HOME', 'PATH'],
  },
];

for (const c of cases) {
  test(`agentBaseEnv: ${c.name}`, () => {
    const base = { PATH: '/bin', HOME: '/h', GITEA_TOKEN: 'tok', UNSET: undefined };
    assert.deepEqual(Object.keys(agentBaseEnv(base, new Set(c.withheld), c.asked)).sort(), c.kept);
  });
}
