// Which enforcer binds spec.sandbox.resources (issue 30 §2): cgroup v2 where it has the controllers and is
// writable, else v1 where each needed controller is mounted and writable, else rlimits. A pure function of the
// mount table, v2's controllers and what could be written: table-tested with real hosts' mountinfo lines.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cgroupMounts, chooseEnforcer } from '../../controller/executors/sandbox/cgroup-detect.ts';
import { cgroupV2Settings, episodeGroup } from '../../controller/executors/sandbox/resources.ts';

// This machine: v1 per controller (cpu alone), an empty v2 at /sys/fs/cgroup/unified.
const HYBRID = [
  '30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
  '31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu',
  '34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
  '38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
  '40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
].join('\n');
// A systemd host: v2 only, at /sys/fs/cgroup.
const UNIFIED = '29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate';
// Older distributions mount cpu and cpuacct together.
const JOINED = `31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n${HYBRID.split('\n')[2]}`;
const all = () => true;
const none = () => false;

describe('cgroupMounts', () => {
  it('v1 per controller and the v2 mount, from mountinfo', () =>
    assert.deepEqual(cgroupMounts(HYBRID), {
      v2: '/sys/fs/cgroup/unified',
      v1: { cpu: '/sys/fs/cgroup/cpu', memory: '/sys/fs/cgroup/memory', pids: '/sys/fs/cgroup/pids' },
    }));
  it('joined controllers share a mount point', () =>
    assert.deepEqual(cgroupMounts(JOINED).v1, { cpu: '/sys/fs/cgroup/cpu,cpuacct', memory: '/sys/fs/cgroup/memory' }));
});

describe('chooseEnforcer', () => {
  const table: Array<[string, Parameters<typeof chooseEnforcer>, ReturnType<typeof chooseEnforcer>]> = [
    [
      'hybrid, v2 without controllers (this machine): v1',
      [['memory', 'pids'], { mountinfo: HYBRID, v2Controllers: '', writable: all }],
      { how: 'cgroup-v1', dirs: { memory: '/sys/fs/cgroup/memory/episodic', pids: '/sys/fs/cgroup/pids/episodic' } },
    ],
    [
      'unified with the controllers, writable: v2',
      [['memory', 'pids', 'cpu'], { mountinfo: UNIFIED, v2Controllers: 'cpuset cpu io memory pids\n', writable: all }],
      { how: 'cgroup-v2', dir: '/sys/fs/cgroup/episodic' },
    ],
    [
      'unified but not writable (an unprivileged controller): rlimits',
      [['memory'], { mountinfo: UNIFIED, v2Controllers: 'memory pids', writable: none }],
      { how: 'rlimit' },
    ],
    [
      'v2 lacks a needed controller, v1 has it: v1',
      [['pids'], { mountinfo: HYBRID, v2Controllers: 'memory', writable: all }],
      { how: 'cgroup-v1', dirs: { pids: '/sys/fs/cgroup/pids/episodic' } },
    ],
    [
      'v1 writable for memory only, pids needed too: rlimits (never half bound)',
      [['memory', 'pids'], { mountinfo: HYBRID, v2Controllers: '', writable: (m) => m.endsWith('memory') }],
      { how: 'rlimit' },
    ],
    [
      'no cgroup mounted (a container): rlimits',
      [['memory'], { mountinfo: '', v2Controllers: '', writable: all }],
      {
        how: 'rlimit',
      },
    ],
  ];
  for (const [what, args, want] of table) it(what, () => assert.deepEqual(chooseEnforcer(...args), want));
});

describe('cgroup v2 files and the rlimit fallback', () => {
  it('memory.max, pids.max, cpu.max "quota period"', () =>
    assert.deepEqual(
      cgroupV2Settings({ memoryMiB: 256, pids: 64, cpu: 1.5 }).map((s) => `${s.file}=${s.value}`),
      ['memory.max=268435456', 'pids.max=64', 'cpu.max=150000 100000'],
    ));
  it('an enforcer of rlimits runs the episode under prlimit, and the record says rlimit', () => {
    const g = episodeGroup('x', { memoryMiB: 64, pids: 50 }, { how: 'rlimit' });
    assert.equal(g.how, 'rlimit');
    assert.deepEqual(g.prefix, ['prlimit', `--as=${64 * 1024 * 1024}`, '--nproc=50', '--']);
  });
  it('a cgroup enforcer whose directory cannot be made falls back to rlimits', () => {
    const g = episodeGroup('x', { memoryMiB: 64 }, { how: 'cgroup-v2', dir: '/dev/null/episodic' });
    assert.equal(g.how, 'rlimit');
  });
});
