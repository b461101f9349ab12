// One contract, two implementations: every port behaves the same locally (spec directory, processes,
// status files) and on a cluster (informer, Pods, /status and Events against the real kube-apiserver).
// The controller loop relies on exactly what is asserted here.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import { episodeRecordOf } from '../../controller/api/episode-record.ts';
import type { DesiredTask } from '../../controller/core/ports.ts';
import { skipCluster } from '../support/cluster.ts';

import { clusterHarness, localHarness } from './harnesses.ts';
import type { PortHarness } from './harnesses.ts';
import { waitFor } from '../support/wait.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

/** A status that says episode `n` runs. */
function running(n: number, over: Partial<AgentTaskStatus> = {}): AgentTaskStatus {
  return {
    ...emptyStatus(),
    phase: 'Running',
    episodes: n,
    currentEpisode: { number: n, startedAt: new Date().toISOString() },
    observedGeneration: 1,
    ...over,
  };
}

const implementations: Array<{ name: string; make: () => Promise<PortHarness>; skip: string | false }> = [
  { name: 'local', make: localHarness, skip: false },
  { name: 'cluster', make: clusterHarness, skip: skipCluster },
];

for (const impl of implementations) {
  describe(`ports contract: ${impl.name}`, { skip: impl.skip, timeout: SUITE_HANG_GUARD_MS }, () => {
    let h: PortHarness;
    const changed: string[] = [];
    const ended: string[] = [];
    before(
      async () => {
        h = await impl.make();
        h.source.subscribe((key) => changed.push(key));
        h.executor.subscribe((key) => ended.push(key));
      },
      { timeout: 90 * 60_000 },
    );
    after(async () => h?.close());
    const task = (name: string): DesiredTask => {
      const t = h.source.get(h.keyOf(name));
      assert.ok(t, `${name} is in the source`);
      return t;
    };

    describe('TaskSource', () => {
      it('announces a new task; get() has its defaulted spec and generation', async () => {
        await h.apply('alpha', { dependsOn: ['beta'] });
        await waitFor('alpha announced', () => changed.includes(h.keyOf('alpha')));
        const t = task('alpha');
        assert.equal(t.name, 'alpha');
        assert.equal(t.deleting, false);
        assert.ok(t.generation >= 1);
        assert.equal(t.spec?.limits.maxConsecutiveFailures, 3, 'a schema default');
        assert.deepEqual(t.dependsOn, ['beta']);
        assert.ok([...h.source.list()].some((x) => x.key === t.key));
      });

      it('an edited spec is announced with a higher generation', async () => {
        const before = task('alpha').generation;
        changed.length = 0;
        await h.apply('alpha', { dependsOn: [], suspend: true });
        await waitFor('edit announced', () => changed.includes(h.keyOf('alpha')));
        assert.ok(task('alpha').generation > before);
        assert.equal(task('alpha').spec?.suspend, true);
      });

      it('a deleted task is announced; once held and released it is gone', async () => {
        await h.apply('doomed');
        await h.source.hold(task('doomed'));
        const last = task('doomed');
        changed.length = 0;
        await h.remove('doomed');
        await waitFor('delete announced', () => changed.includes(h.keyOf('doomed')));
        const now = h.source.get(h.keyOf('doomed'));
        assert.ok(now === undefined || now.deleting, 'gone, or marked as deleting until released');
        await h.source.release(now ?? last);
        await waitFor('gone after release', () => h.source.get(h.keyOf('doomed')) === undefined);
      });
    });

    describe('EpisodeExecutor', () => {
      it('start → running and holding a slot; its end is announced and observed with exit code and cost', async () => {
        await h.apply('worker');
        const t = task('worker');
        const slots = h.executor.runningCount();
        ended.length = 0;
        const details = await h.executor.start(t, 1, running(1));
        assert.equal(typeof details, 'object');
        await waitFor('running', () => h.executor.observe(t, running(1), new Date())?.state === 'running');
        await waitFor('slot taken', () => h.executor.runningCount() === slots + 1);
        assert.ok([...h.executor.keys()].includes(t.key));
        await h.finish(t, 1, { exitCode: 0, costUSD: 0.25, promise: true });
        await waitFor('end announced', () => ended.includes(t.key));
        const seen = await waitFor('finished', () => {
          const o = h.executor.observe(t, running(1), new Date());
          return o?.state === 'finished' ? o : undefined;
        });
        assert.equal(seen.number, 1);
        assert.equal(seen.result?.exitCode, 0);
        assert.equal(seen.result?.costUSD, 0.25);
        assert.equal(seen.result?.completion, 'promise');
        await waitFor('slot freed', () => h.executor.runningCount() === slots);
      });

      it('stop ends a running episode; it is no longer running', async () => {
        await h.apply('stopper');
        const t = task('stopper');
        await h.executor.start(t, 1, running(1));
        await waitFor('running', () => h.executor.observe(t, running(1), new Date())?.state === 'running');
        ended.length = 0;
        await h.executor.stop(t, 1, 'cancelled');
        await waitFor('stop announced', () => ended.includes(t.key));
        const seen = await waitFor(
          'not running',
          () => {
            const o = h.executor.observe(t, running(1), new Date());
            return o && o.state !== 'running' ? o : undefined;
          },
          30_000,
        );
        assert.equal(seen.number, 1);
      });

      it('an episode on record that was never started is observed as gone, removed by no one', async () => {
        await h.apply('unstarted');
        const seen = h.executor.observe(task('unstarted'), running(7), new Date());
        assert.deepEqual([seen?.number, seen?.state, seen?.removedBy], [7, 'gone', undefined]);
      });

      it('a task with no episode observes nothing', async () => {
        await h.apply('idle');
        assert.equal(h.executor.observe(task('idle'), emptyStatus(), new Date()), undefined);
      });
    });

    describe('StatusSink', () => {
      it('read() returns what was written at once; a start is on durable record when write resolves', async () => {
        await h.apply('recorded');
        const t = task('recorded');
        const finished: AgentTaskStatus = running(2, {
          costUSD: 0.5,
          lastEpisode: { number: 1, outcome: 'continue', exitCode: 0, costUSD: 0.5 },
        });
        await h.sink.write(t, finished, { beforeStart: true });
        assert.equal(h.sink.read(t)?.currentEpisode?.number, 2);
        const back = await h.readBack(t);
        assert.equal(back?.currentEpisode?.number, 2);
        assert.equal(back?.lastEpisode?.number, 1);
        assert.equal(back?.costUSD, 0.5, 'spend is never lost');
      });

      it('a status write without a start is also recorded', async () => {
        const t = task('recorded');
        await h.sink.write(
          t,
          {
            ...emptyStatus(),
            phase: 'Succeeded',
            reason: 'PromiseDetected',
            costUSD: 0.75,
            episodes: 2,
            observedGeneration: 1,
          },
          { beforeStart: false },
        );
        await waitFor('on record', async () => (await h.readBack(t))?.phase === 'Succeeded');
      });

      it('an episode record is read back by a fresh reader, evidence and all; recording it again keeps one', async () => {
        await h.apply('chronicle');
        const t = task('chronicle');
        const at = (s: number) => new Date(Date.UTC(2026, 10, 23, 10, 0, s)).toISOString();
        const failed = episodeResult({
          exitCode: 1,
          costUSD: 0.1,
          message: 'tests failed',
          evidence: { errorFingerprint: 'expected <n> to equal <n>' },
        });
        const changed = episodeResult({
          exitCode: 0,
          costUSD: 0.25,
          completion: 'promise',
          tokens: { input: 1200, output: 300, cacheRead: 50 },
          evidence: {
            workspace: {
              kind: 'git',
              changed: true,
              headBefore: 'a'.repeat(40),
              headAfter: 'b'.repeat(40),
              filesChanged: 3,
              insertions: 40,
              deletions: 2,
              dirty: false,
            },
            checklist: { done: 4, total: 5, inProgress: 1 },
          },
        });
        const first = episodeRecordOf(
          'chronicle',
          {
            number: 1,
            outcome: 'failed',
            exitCode: 1,
            startedAt: at(0),
            finishedAt: at(5),
            costUSD: 0.1,
            message: 'tests failed',
          },
          'Backoff',
          failed,
        );
        const second = episodeRecordOf(
          'chronicle',
          { number: 2, outcome: 'succeeded', exitCode: 0, startedAt: at(9), finishedAt: at(30), costUSD: 0.25 },
          'PromiseDetected',
          changed,
        );
        await h.sink.write(
          t,
          {
            ...emptyStatus(),
            phase: 'Succeeded',
            episodes: 2,
            costUSD: 0.35,
            lastEpisode: { number: 2, outcome: 'succeeded' },
            observedGeneration: 1,
          },
          { beforeStart: false },
        );
        await h.sink.recordEpisode(t, first);
        await h.sink.recordEpisode(t, second);
        await h.sink.recordEpisode(t, second); // a restart that saw the episode end again
        const back = await h.readRecords(t);
        assert.deepEqual(back, JSON.parse(JSON.stringify([first, second])));
        assert.equal(back[1].evidence?.workspace?.headAfter, 'b'.repeat(40));
        assert.deepEqual(back[1].tokens, { input: 1200, output: 300, cacheRead: 50, cacheWrite: 0 });
      });

      it('an episode record is durable once recordEpisode resolves: the status reporting it may follow', async () => {
        await h.apply('durable');
        const t = task('durable');
        const at = new Date(Date.UTC(2026, 10, 23, 11, 0, 0)).toISOString();
        const record = episodeRecordOf(
          'durable',
          { number: 1, outcome: 'failed', exitCode: 1, startedAt: at, finishedAt: at, costUSD: 0.1 },
          'Backoff',
          episodeResult({ exitCode: 1, costUSD: 0.1 }),
        );
        await h.sink.recordEpisode(t, record);
        // Read without waiting for anything still under way: a status written now would find its record.
        assert.deepEqual(
          (await h.readRecords(t, 'now')).map((r) => r.number),
          [1],
        );
      });

      it('events are recorded with their reason', async () => {
        const t = task('recorded');
        h.sink.event(t, 'Warning', 'EpisodeFailed', 'episode 1 failed', { episode: 1 });
        await waitFor('event recorded', async () => (await h.events(t)).includes('EpisodeFailed'));
      });
    });
  });
}
