// Pure parts of cluster mode: episode pod names and manifests, and what a pod's status means for its
// episode. (Everything that talks to the API is tested against the real control plane elsewhere.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import type { AgentTask } from '../../controller/api/agent-task.ts';
import { EpisodeConfigSchema } from '../../controller/api/episode-config.ts';
import { buildEpisodePod, episodePodName, podEpisode } from '../../controller/cluster/episode-pod.ts';
import { observeDeletedPod, observePod } from '../../controller/cluster/pod-outcome.ts';
import { clusterSpec } from '../../controller/cluster/task-reconciler.ts';
import type { KubeObject } from '../../controller/cluster/informer.ts';

function task(name = 'demo', spec: Record<string, unknown> = {}): { task: AgentTask; spec: ReturnType<typeof AgentTaskSpecSchema.parse> } {
  const parsed = AgentTaskSpecSchema.parse({ prompt: 'do {{task}} #{{episode}}/{{maxEpisodes}} after: {{lastEpisode.message}}', agent: { image: 'img:1', command: ['claude', '-p'] }, ...spec });
  return {
    task: { apiVersion: 'episodic.dev/v1alpha1', kind: 'AgentTask', metadata: { name, namespace: 'ns1', uid: 'uid-1' }, spec: parsed },
    spec: parsed,
  };
}

function pod(overrides: Record<string, any> = {}, status: Record<string, any> = {}): KubeObject {
  return {
    metadata: { name: 'demo-ep-2', namespace: 'ns1', labels: { 'episodic.dev/task': 'demo', 'episodic.dev/episode': '2' }, creationTimestamp: '2026-01-01T00:00:00Z', ...overrides },
    spec: { containers: [{ name: 'agent', image: 'img:1' }] },
    status,
  };
}

const now = new Date('2026-01-01T00:10:00Z');

describe('episode pod names', () => {
  it('are <task>-ep-<n>, shortened with a hash past 63 characters', () => {
    assert.equal(episodePodName('demo', 7), 'demo-ep-7');
    const long = 'a'.repeat(60);
    const name = episodePodName(long, 12);
    assert.ok(name.length <= 63, name);
    assert.match(name, /^a+-[0-9a-f]{8}-ep-12$/);
    assert.notEqual(episodePodName(`${'a'.repeat(59)}b`, 12), name, 'different tasks, different names');
    assert.equal(episodePodName(long, 12), name, 'deterministic');
  });
});

describe('buildEpisodePod', () => {
  it('runs the runner with the agent argv, the config and the rendered prompt', () => {
    const { task: t, spec } = task();
    const p = buildEpisodePod({ task: t, spec, episode: 2, lastEpisodeMessage: 'tests fail' });
    assert.equal(p.metadata.name, 'demo-ep-2');
    assert.deepEqual(p.metadata.labels, { 'episodic.dev/task': 'demo', 'episodic.dev/episode': '2', 'app.kubernetes.io/managed-by': 'episodic' });
    assert.deepEqual(p.metadata.ownerReferences, [
      { apiVersion: 'episodic.dev/v1alpha1', kind: 'AgentTask', name: 'demo', uid: 'uid-1', controller: true, blockOwnerDeletion: true },
    ]);
    assert.equal(p.spec.restartPolicy, 'Never');
    assert.equal(p.spec.activeDeadlineSeconds, 3600);
    assert.equal(p.spec.automountServiceAccountToken, false);
    const c = p.spec.containers[0];
    assert.deepEqual(c.command, ['episodic', 'episode', '--', 'claude', '-p']);
    assert.equal(c.terminationMessagePolicy, 'File');
    const env = Object.fromEntries(c.env.map((e: any) => [e.name, e.value]));
    assert.equal(env.EPISODIC_PROMPT, 'do demo #2/20 after: tests fail');
    const config = EpisodeConfigSchema.parse(JSON.parse(env.EPISODIC_EPISODE_CONFIG));
    assert.equal(config.task, 'demo');
    assert.equal(config.namespace, 'ns1');
    assert.equal(config.episode, 2);
    assert.equal(config.timeoutSeconds, 3600);
    assert.equal(config.workspaceDir, '/workspace');
  });

  it('is non-root and locked down by default', () => {
    const { task: t, spec } = task();
    const p = buildEpisodePod({ task: t, spec, episode: 1 });
    assert.deepEqual(p.spec.securityContext, { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } });
    const sc = p.spec.containers[0].securityContext;
    assert.equal(sc.allowPrivilegeEscalation, false);
    assert.equal(sc.readOnlyRootFilesystem, true);
    assert.deepEqual(sc.capabilities, { drop: ['ALL'] });
    const mounts = p.spec.containers[0].volumeMounts.map((m: any) => m.mountPath).sort();
    assert.deepEqual(mounts, ['/home/episodic', '/tmp', '/workspace']);
  });

  it('passes secrets by reference only', () => {
    const { task: t, spec } = task('demo', {
      agent: {
        image: 'img:1',
        command: ['claude'],
        env: [{ name: 'ANTHROPIC_API_KEY', valueFrom: { secretKeyRef: { name: 'llm', key: 'key' } } }],
        envFrom: [{ secretRef: { name: 'more' } }],
        resources: { limits: { memory: '1Gi' } },
        imagePullPolicy: 'Always',
      },
    });
    const c = buildEpisodePod({ task: t, spec, episode: 1 }).spec.containers[0];
    assert.deepEqual(c.env.find((e: any) => e.name === 'ANTHROPIC_API_KEY'), { name: 'ANTHROPIC_API_KEY', valueFrom: { secretKeyRef: { name: 'llm', key: 'key' } } });
    assert.deepEqual(c.envFrom, [{ secretRef: { name: 'more' } }]);
    assert.deepEqual(c.resources, { limits: { memory: '1Gi' } });
    assert.equal(c.imagePullPolicy, 'Always');
  });

  it('mounts a PVC workspace, or clones git into an emptyDir with the secret as env', () => {
    const pvc = task('demo', { workspace: { volumeClaim: 'work' } });
    assert.deepEqual(buildEpisodePod({ ...pvc, episode: 1 }).spec.volumes[0], { name: 'workspace', persistentVolumeClaim: { claimName: 'work' } });

    const git = task('demo', { workspace: { git: { url: 'https://example.com/r.git', ref: 'dev', secretRef: { name: 'gh' } } } });
    const p = buildEpisodePod({ ...git, episode: 1 });
    assert.deepEqual(p.spec.volumes[0], { name: 'workspace', emptyDir: {} });
    assert.deepEqual(p.spec.containers[0].envFrom, [{ secretRef: { name: 'gh' } }]);
    const config = JSON.parse(p.spec.containers[0].env[0].value);
    assert.deepEqual(config.git, { url: 'https://example.com/r.git', ref: 'dev', secretRef: { name: 'gh' } });

    const dir = task('demo', { workspace: 'some/dir' });
    assert.deepEqual(buildEpisodePod({ ...dir, episode: 1 }).spec.volumes[0], { name: 'workspace', emptyDir: {} });
  });

  it('leaves promptFile to the runner', () => {
    const { task: t, spec } = task('demo', { prompt: undefined, promptFile: 'PROMPT.md' });
    const c = buildEpisodePod({ task: t, spec, episode: 1 }).spec.containers[0];
    assert.equal(c.env.find((e: any) => e.name === 'EPISODIC_PROMPT'), undefined);
    assert.equal(JSON.parse(c.env[0].value).promptFile, 'PROMPT.md');
  });

  it('requires an image in cluster mode', () => {
    assert.match(clusterSpec({ prompt: 'x', agent: { command: ['a'] } }).specError ?? '', /spec\.agent\.image: required/);
    assert.match(clusterSpec({ prompt: 'x', agent: {} }).specError ?? '', /spec\.agent\.command/);
    assert.ok(clusterSpec({ prompt: 'x', agent: { command: ['a'], image: 'i' } }).spec);
  });
});

describe('observePod', () => {
  const opts = { now, imagePullGraceMs: 120_000 };

  it('a running pod is a running episode', () => {
    const o = observePod(pod({}, { phase: 'Running', startTime: '2026-01-01T00:01:00Z' }), opts);
    assert.deepEqual(o.episode, { number: 2, state: 'running', startedAt: '2026-01-01T00:01:00Z' });
    assert.equal(podEpisode(pod()), 2);
  });

  it('decodes the termination message of a finished pod', () => {
    const message = JSON.stringify({ exitCode: 0, completion: 'promise', costUSD: 0.25 });
    const o = observePod(pod({}, { phase: 'Succeeded', containerStatuses: [{ name: 'agent', state: { terminated: { exitCode: 0, message, finishedAt: '2026-01-01T00:05:00Z' } } }] }), opts);
    assert.equal(o.episode.state, 'finished');
    assert.equal(o.episode.finishedAt, '2026-01-01T00:05:00Z');
    assert.equal(o.episode.result?.completion, 'promise');
    assert.equal(o.episode.result?.costUSD, 0.25);
  });

  it('maps pod-level endings', () => {
    const terminated = (t: any, extra: any = {}) => observePod(pod({}, { phase: 'Failed', ...extra, containerStatuses: [{ name: 'agent', state: { terminated: t } }] }), opts).episode.result;
    assert.equal(terminated({ exitCode: 137 }, { reason: 'DeadlineExceeded' })?.timedOut, true);
    const oom = terminated({ exitCode: 137, reason: 'OOMKilled' });
    assert.equal(oom?.errorClass, 'none');
    assert.match(oom?.message ?? '', /OOMKilled/);
    assert.equal(terminated({ exitCode: 3, message: 'not json' })?.exitCode, 3, 'undecodable → failed with the exit code');
    assert.equal(terminated({ exitCode: 3, message: 'not json' })?.agentError, true);
    const evicted = observePod(pod({}, { phase: 'Failed', reason: 'Evicted', message: 'low memory' }), opts).episode.result;
    assert.equal(evicted?.errorClass, 'transient');
    const disrupted = observePod(pod({}, { phase: 'Running', conditions: [{ type: 'DisruptionTarget', status: 'True' }] }), opts).episode.result;
    assert.equal(disrupted?.errorClass, 'transient');
  });

  it('our own stop decides the outcome; someone else deleting the pod is transient', () => {
    const deleting = pod({ deletionTimestamp: '2026-01-01T00:09:00Z' }, { phase: 'Running' });
    assert.equal(observePod(deleting, { ...opts, stopIntent: 'timeout' }).episode.result?.timedOut, true);
    assert.equal(observePod(deleting, { ...opts, stopIntent: 'cancelled' }).episode.result?.cancelled, true);
    assert.equal(observePod(deleting, opts).episode.result?.errorClass, 'transient');
    assert.equal(observeDeletedPod(2, opts).result?.errorClass, 'transient');
    assert.equal(observeDeletedPod(2, { ...opts, stopIntent: 'cancelled' }).result?.cancelled, true);
  });

  it('an image that never pulls is fatal after the grace period, with the kubelet message', () => {
    const waiting = { phase: 'Pending', containerStatuses: [{ name: 'agent', state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "img:1"' } } }] };
    const young = observePod(pod({ creationTimestamp: '2026-01-01T00:09:00Z' }, waiting), opts);
    assert.equal(young.episode.state, 'running');
    assert.equal(young.recheckAfterMs, 60_000);
    const old = observePod(pod({}, waiting), opts);
    assert.equal(old.episode.result?.errorClass, 'fatal');
    assert.equal(old.episode.result?.message, 'ImagePullBackOff: Back-off pulling image "img:1"');
    assert.equal(old.deletePod, true);
  });

  it('an unschedulable pod keeps the episode waiting', () => {
    const o = observePod(pod({}, { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes' }] }), opts);
    assert.equal(o.episode.state, 'running');
    assert.match(o.unschedulable?.message ?? '', /0\/3 nodes/);
  });
});
