// spec.sandbox: every bad field is named (a mount with "..", of a state directory, an allowHost without a port),
// a step's sandbox replaces the task's, and the defaults are those of the README's "Sandbox".
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { missingPodMount, podMountsProblem, SandboxSchema } from '../../controller/api/sandbox.ts';
import { effectiveSpec } from '../../controller/api/steps.ts';
import { describeIssues } from '../../controller/api/validate.ts';

const problems = (sandbox: unknown) => {
  const parsed = AgentTaskSpecSchema.safeParse({ prompt: 'p', agent: { command: ['a'] }, sandbox });
  return parsed.success ? [] : describeIssues(parsed.error, 'spec');
};

describe('spec.sandbox', () => {
  it('defaults: enabled, network gateway, nothing allowed, no mounts', () =>
    assert.deepEqual(SandboxSchema.parse({}), {
      enabled: true,
      network: 'gateway',
      allowHosts: [],
      allowCIDRs: [],
      mounts: [],
      resources: {},
    }));
  it('accepts a full sandbox', () =>
    assert.deepEqual(
      problems({
        network: 'gateway',
        allowHosts: ['github.com:443', '[::1]:8080'],
        allowCIDRs: ['10.0.0.0/8', 'fd00::/8'],
        mounts: [
          { path: '/opt/tools', readOnly: true },
          { path: '/srv/cache', readOnly: false },
        ],
        resources: { memoryMiB: 512, cpu: 1.5, pids: 128 },
      }),
      [],
    ));
  const table: Array<[string, unknown, RegExp]> = [
    [
      'a mount with ..',
      { mounts: [{ path: '/opt/../root/.ssh' }] },
      /^spec\.sandbox\.mounts\[0\]\.path: must not contain "\.\."/,
    ],
    [
      'a relative mount',
      { mounts: [{ path: 'tools' }] },
      /^spec\.sandbox\.mounts\[0\]\.path: must be an absolute path/,
    ],
    [
      'a mount of the state dir',
      { mounts: [{ path: '/work/.episodic' }] },
      /^spec\.sandbox\.mounts\[0\]\.path: .*state directory/,
    ],
    ['a mount inside the state dir', { mounts: [{ path: '/w/.episodic/logs' }] }, /state directory/],
    ['a mount of /', { mounts: [{ path: '/' }] }, /^spec\.sandbox\.mounts\[0\]\.path: must not be \//],
    [
      'an allowHost without a port',
      { allowHosts: ['ok:1', 'github.com'] },
      /^spec\.sandbox\.allowHosts\[1\]: must be "host:port"/,
    ],
    ['an allowHost with port 0', { allowHosts: ['github.com:0'] }, /^spec\.sandbox\.allowHosts\[0\]: port must be/],
    ['an allowHost with a scheme', { allowHosts: ['https://github.com:443'] }, /allowHosts\[0\]: must be "host:port"/],
    [
      'allowHosts without the gateway proxy',
      { network: 'none', allowHosts: ['a.b:443'] },
      /^spec\.sandbox\.allowHosts: only network gateway/,
    ],
    ['a bad CIDR', { allowCIDRs: ['10.0.0.0/33'] }, /^spec\.sandbox\.allowCIDRs\[0\]: prefix length must be 0-32/],
    ['a CIDR without a prefix', { allowCIDRs: ['10.0.0.1'] }, /^spec\.sandbox\.allowCIDRs\[0\]: must be a CIDR/],
    ['an unknown network', { network: 'host' }, /^spec\.sandbox\.network: /],
    ['too few pids', { resources: { pids: 1 } }, /^spec\.sandbox\.resources\.pids: /],
    ['an unknown field', { netwrok: 'none' }, /^spec\.sandbox/],
  ];
  for (const [what, sandbox, expected] of table)
    it(`refuses ${what}, naming the field`, () => {
      const found = problems(sandbox);
      assert.equal(found.length, 1, found.join('\n'));
      assert.match(found[0], expected);
    });
  it('names every bad field at once', () => {
    const found = problems({ mounts: [{ path: '/a/../b' }, { path: '/x/.episodic' }], allowHosts: ['nope'] });
    assert.equal(found.length, 3, found.join('\n'));
  });
  it("a step's sandbox replaces the task's as a whole; a step without one keeps the task's", () => {
    const spec = AgentTaskSpecSchema.parse({
      agent: { command: ['a'] },
      sandbox: { network: 'none', resources: { pids: 64 } },
      steps: [
        { name: 'plan', prompt: 'p' },
        { name: 'build', prompt: 'b', sandbox: { network: 'open' } },
      ],
    });
    const at = (name: string) => effectiveSpec(spec, { step: { name, index: 1 } } as never).sandbox;
    assert.equal(at('plan')?.network, 'none');
    assert.deepEqual(at('build'), SandboxSchema.parse({ network: 'open' }));
  });
});

describe('spec.sandbox.mounts on a cluster: paths of the image, read-only', () => {
  const box = (mounts: unknown[], enabled = true) => SandboxSchema.parse({ enabled, mounts });
  const rows: Array<[string, ReturnType<typeof box> | undefined, RegExp | undefined]> = [
    ['no sandbox', undefined, undefined],
    ['read-only mounts', box([{ path: '/opt/tools' }, { path: '/usr/share/dict', readOnly: true }]), undefined],
    [
      'a read-write mount, named by index',
      box([{ path: '/opt/a' }, { path: '/srv/cache', readOnly: false }]),
      /^spec\.sandbox\.mounts\[1\] \(\/srv\/cache\): readOnly: false has no meaning on a cluster/,
    ],
    ['a disabled sandbox refuses nothing', box([{ path: '/srv/cache', readOnly: false }], false), undefined],
  ];
  for (const [name, sandbox, expected] of rows)
    it(name, () => {
      const problem = podMountsProblem(sandbox);
      if (expected) assert.match(problem ?? '', expected);
      else assert.equal(problem, undefined);
    });
  it('the runner names the first path the image lacks by its index', () => {
    const has = (p: string) => p !== '/opt/b';
    assert.equal(missingPodMount(['/opt/a'], has), undefined);
    assert.match(
      missingPodMount(['/opt/a', '/opt/b'], has) ?? '',
      /^spec\.sandbox\.mounts\[1\]\.path: \/opt\/b is not/,
    );
  });
});
