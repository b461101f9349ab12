// The spawn loop's part of a family's spend: a child's view carries its whole subtree's cost (the parent's cap
// counts grandchildren), and a task whose spend changed requeues every ancestor, a change of phase only its parent.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import type { Mailboxes } from '../../controller/core/mailboxes.ts';
import type { DesiredTask, StatusSink, TaskSource } from '../../controller/core/ports.ts';
import { SpawnLoop } from '../../controller/core/spawn-loop.ts';

const PARENT = 'episodic.dev/parent';
const task = (name: string, parent?: string): DesiredTask => ({
  key: `ns/${name}`,
  namespace: 'ns',
  name,
  generation: 1,
  dependsOn: [],
  deleting: false,
  ...(parent ? { labels: { [PARENT]: parent } } : {}),
});
const spent = (costUSD: number, phase: AgentTaskStatus['phase'] = 'Running'): AgentTaskStatus => ({
  ...emptyStatus(),
  phase,
  costUSD,
});

function loop(tasks: DesiredTask[], statuses: Record<string, AgentTaskStatus>) {
  const byKey = new Map(tasks.map((t) => [t.key, t]));
  const source = {
    get: (k: string) => byKey.get(k),
    list: () => byKey.values(),
    subscribe: () => undefined,
  } as unknown as TaskSource<DesiredTask>;
  const sink = { read: (t: DesiredTask) => statuses[t.name] } as unknown as StatusSink<DesiredTask>;
  const mailboxes = { read: async () => [], ack: async () => undefined } as unknown as Mailboxes;
  return new SpawnLoop({ source, sink, mailboxes });
}

// gp → c → g → gg (depth 3), and gp → d.
const TREE = [task('gp'), task('c', 'gp'), task('d', 'gp'), task('g', 'c'), task('gg', 'g')];
const STATUSES = { gp: spent(0.01), c: spent(0.02), d: spent(0.5), g: spent(2), gg: spent(4) };

describe('SpawnLoop and a family’s spend', () => {
  it('a child’s view has the spend of its whole subtree, each task once', async () => {
    const facts = await loop(TREE, STATUSES).facts(task('gp'), undefined);
    assert.deepEqual(facts.children.map((c) => [c.name, c.costUSD]).sort(), [
      ['c', 6.02],
      ['d', 0.5],
    ]);
  });

  it('a spend change requeues every ancestor; a phase change only the parent', async () => {
    const spawn = loop(TREE, STATUSES);
    const requeued: string[] = [];
    await spawn.afterWrite(task('gg', 'g'), spent(4), spent(5), undefined, (k) => requeued.push(k));
    assert.deepEqual(requeued, ['ns/g', 'ns/c', 'ns/gp']);
    requeued.length = 0;
    await spawn.afterWrite(task('gg', 'g'), spent(5), spent(5, 'Succeeded'), undefined, (k) => requeued.push(k));
    assert.deepEqual(requeued, ['ns/g']);
  });

  it('parent labels that loop: each ancestor once', async () => {
    const looped = [task('a', 'b'), task('b', 'a')];
    const requeued: string[] = [];
    await loop(looped, { a: spent(1), b: spent(1) }).afterWrite(
      looped[0] as DesiredTask,
      spent(1),
      spent(2),
      undefined,
      (k) => requeued.push(k),
    );
    assert.deepEqual(requeued, ['ns/b']);
  });
});
