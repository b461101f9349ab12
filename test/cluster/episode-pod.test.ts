// Pure parts of cluster mode: episode pod names and manifests, and what a pod's status means for its
// episode. (Everything that talks to the API is tested against the real control plane elsewhere.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import type { AgentTask } from '../../controller/api/agent-task.ts';
import { EPISODE_CONFIG_ENV, EpisodeConfigSchema, POD_CODEX_HOME } from '../../controller/api/episode-config.ts';
import { agentGatewayEnv } from '../../controller/gateway/agent-env.ts';
import { episodePodName, podEpisode } from '../../controller/kube/names.ts';
import { buildEpisodePod as buildPod } from '../../controller/executors/cluster/episode-pod.ts';
import type { EpisodePodInput } from '../../controller/executors/cluster/episode-pod.ts';
import { observeDeletedPod, observePod } from '../../controller/executors/cluster/pod-outcome.ts';
import { clusterSpec, parseEpisodeDefaults } from '../../controller/kube/episode-defaults.ts';
import type { LooseObject as KubeObject } from '../support/loose-object.ts';

// The assertions below read any field of the pod.
const buildEpisodePod = (input: EpisodePodInput): any => buildPod(input);

function task(
  name = 'demo',
  spec: Record<string, unknown> = {},
): { task: AgentTask; spec: ReturnType<typeof AgentTaskSpecSchema.parse> } {
  const parsed = AgentTaskSpecSchema.parse({
    prompt: 'do {{task}} #{{episode}}/{{maxEpisodes}} after: {{lastEpisode.message}}',
    agent: { image: 'img:1', command: ['claude', '-p'] },
    ...spec,
  });
  return {
    task: {
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTask',
      metadata: { name, namespace: 'ns1', uid: 'uid-1' },
      spec: parsed,
    },
    spec: parsed,
  };
}

function pod(overrides: Record<string, any> = {}, status: Record<string, any> = {}): KubeObject {
  return {
    metadata: {
      name: 'demo-ep-2',
      namespace: 'ns1',
      labels: { 'episodic.dev/task': 'demo', 'episodic.dev/episode': '2' },
      creationTimestamp: '2026-01-01T00:00:00Z',
      ...overrides,
    },
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
    assert.deepEqual(p.metadata.labels, {
      'episodic.dev/task': 'demo',
      'episodic.dev/episode': '2',
      'app.kubernetes.io/managed-by': 'episodic',
    });
    assert.deepEqual(p.metadata.ownerReferences, [
      {
        apiVersion: 'episodic.dev/v1alpha1',
        kind: 'AgentTask',
        name: 'demo',
        uid: 'uid-1',
        controller: true,
        blockOwnerDeletion: true,
      },
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

  it('spec.sandbox.mounts: the runner gets the paths to check in the image; the pod gets no volume for them', () => {
    const { task: t, spec } = task('demo', { sandbox: { mounts: [{ path: '/opt/tools' }, { path: '/usr/share/x' }] } });
    const p = buildEpisodePod({ task: t, spec, episode: 1 });
    const env = Object.fromEntries(p.spec.containers[0].env.map((e: any) => [e.name, e.value]));
    assert.deepEqual(EpisodeConfigSchema.parse(JSON.parse(env.EPISODIC_EPISODE_CONFIG)).sandboxMounts, [
      '/opt/tools',
      '/usr/share/x',
    ]);
    assert.deepEqual(
      p.spec.volumes.map((v: any) => v.name),
      ['workspace', 'home', 'tmp'],
    );
    const plain = buildEpisodePod({ task: t, spec: task().spec, episode: 1 });
    const plainEnv = Object.fromEntries(plain.spec.containers[0].env.map((e: any) => [e.name, e.value]));
    assert.equal(JSON.parse(plainEnv.EPISODIC_EPISODE_CONFIG).sandboxMounts, undefined);
  });

  it('is non-root and locked down by default', () => {
    const { task: t, spec } = task();
    const p = buildEpisodePod({ task: t, spec, episode: 1 });
    assert.deepEqual(p.spec.securityContext, {
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      fsGroup: 65532,
      seccompProfile: { type: 'RuntimeDefault' },
    });
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
    assert.deepEqual(
      c.env.find((e: any) => e.name === 'ANTHROPIC_API_KEY'),
      { name: 'ANTHROPIC_API_KEY', valueFrom: { secretKeyRef: { name: 'llm', key: 'key' } } },
    );
    assert.deepEqual(c.envFrom, [{ secretRef: { name: 'more' } }]);
    assert.deepEqual(c.resources, { limits: { memory: '1Gi' } });
    assert.equal(c.imagePullPolicy, 'Always');
  });

  it('mounts a PVC workspace, or clones git into an emptyDir with the secret as env', () => {
    const pvc = task('demo', { workspace: { volumeClaim: 'work' } });
    assert.deepEqual(buildEpisodePod({ ...pvc, episode: 1 }).spec.volumes[0], {
      name: 'workspace',
      persistentVolumeClaim: { claimName: 'work' },
    });

    const git = task('demo', {
      workspace: { git: { url: 'https://example.com/r.git', ref: 'dev', secretRef: { name: 'gh' } } },
    });
    const p = buildEpisodePod({ ...git, episode: 1 });
    assert.deepEqual(p.spec.volumes[0], { name: 'workspace', emptyDir: {} });
    assert.deepEqual(p.spec.containers[0].envFrom, [{ secretRef: { name: 'gh' } }]);
    const config = JSON.parse(p.spec.containers[0].env[0].value);
    assert.deepEqual(config.git, { url: 'https://example.com/r.git', ref: 'dev', secretRef: { name: 'gh' } });

    const dir = task('demo', { workspace: 'some/dir' });
    assert.deepEqual(buildEpisodePod({ ...dir, episode: 1 }).spec.volumes[0], { name: 'workspace', emptyDir: {} });
  });

  it('leaves promptFile to the runner, with the last episode message for {{lastEpisode.message}}', () => {
    const { task: t, spec } = task('demo', { prompt: undefined, promptFile: 'PROMPT.md' });
    const c = buildEpisodePod({ task: t, spec, episode: 2, lastEpisodeMessage: 'tests fail' }).spec.containers[0];
    assert.equal(
      c.env.find((e: any) => e.name === 'EPISODIC_PROMPT'),
      undefined,
    );
    const config = EpisodeConfigSchema.parse(JSON.parse(c.env[0].value));
    assert.equal(config.promptFile, 'PROMPT.md');
    assert.equal(config.lastEpisodeMessage, 'tests fail');
    const first = EpisodeConfigSchema.parse(
      JSON.parse(buildEpisodePod({ task: t, spec, episode: 1 }).spec.containers[0].env[0].value),
    );
    assert.equal(first.lastEpisodeMessage, undefined);
    const inline = task();
    const rendered = JSON.parse(
      buildEpisodePod({ ...inline, episode: 2, lastEpisodeMessage: 'x' }).spec.containers[0].env[0].value,
    );
    assert.equal(rendered.lastEpisodeMessage, undefined, 'an inline prompt is rendered by the controller');
  });

  it('requires an image in cluster mode, from the task or the episode defaults', () => {
    assert.match(
      clusterSpec({ prompt: 'x', agent: { command: ['a'] } }).specError ?? '',
      /spec\.agent\.image: required/,
    );
    assert.match(clusterSpec({ prompt: 'x', agent: {} }).specError ?? '', /spec\.agent\.command/);
    assert.ok(clusterSpec({ prompt: 'x', agent: { command: ['a'], image: 'i' } }).spec);
    assert.ok(clusterSpec({ prompt: 'x', agent: { command: ['a'] } }, { image: 'default:1' }).spec);
    assert.match(
      clusterSpec({ prompt: 'x', agent: { command: ['a'] } }, { nodeSelector: {} }).specError ?? '',
      /--episode-defaults/,
    );
  });
});

describe('buildEpisodePod with --episode-defaults', () => {
  const defaults = parseEpisodeDefaults(
    [
      'image: agents/claude:2',
      'imagePullPolicy: IfNotPresent',
      'imagePullSecrets: [{ name: regcred }]',
      'serviceAccountName: agent',
      'priorityClassName: batch-low',
      'nodeSelector: { episodic.dev/agents: "true" }',
      'tolerations: [{ key: agents, operator: Exists, effect: NoSchedule }]',
      'affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [] } }',
      'resources: { requests: { cpu: 500m }, limits: { memory: 2Gi } }',
      'podSecurityContext: { fsGroupChangePolicy: OnRootMismatch, runAsUser: 1001 }',
      'securityContext: { readOnlyRootFilesystem: false }',
      'podLabels: { team: ml, episodic.dev/task: hijack }',
      'podAnnotations: { cost-center: "42" }',
      'env:',
      '  - { name: ANTHROPIC_API_KEY, valueFrom: { secretKeyRef: { name: agent-keys, key: anthropic, optional: true } } }',
      '  - { name: LOG_LEVEL, value: debug }',
    ].join('\n'),
    'defaults.yaml',
  );

  it("behind the gateway: the defaults' Secret references and every provider key go; the URL and token come last", () => {
    const spec = AgentTaskSpecSchema.parse({
      prompt: 'p',
      agent: {
        command: ['claude'],
        credentials: 'claude',
        env: [
          { name: 'OPENAI_API_KEY', value: 'sk-literal' },
          { name: 'GITHUB_TOKEN', valueFrom: { secretKeyRef: { name: 'gh', key: 'token' } } },
        ],
      },
    });
    const t: AgentTask = {
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTask',
      metadata: { name: 'demo', namespace: 'ns1', uid: 'uid-1' },
      spec,
    };
    const gateway = {
      env: { ANTHROPIC_BASE_URL: 'http://gw:8070/t/ns1/demo', ANTHROPIC_API_KEY: 'episodic-gw-tok' },
      tokenSha256: 'hash-of-tok',
    };
    const p = buildEpisodePod({ task: t, spec, episode: 1, defaults, gateway });
    const env = p.spec.containers[0].env.filter((e: any) => !e.name.startsWith('EPISODIC_') && e.name !== 'HOME');
    assert.deepEqual(env, [
      { name: 'LOG_LEVEL', value: 'debug' },
      // The task's own Secret reference for something else stays: the task asked for it by name.
      { name: 'GITHUB_TOKEN', valueFrom: { secretKeyRef: { name: 'gh', key: 'token' } } },
      { name: 'ANTHROPIC_BASE_URL', value: 'http://gw:8070/t/ns1/demo' },
      { name: 'ANTHROPIC_API_KEY', value: 'episodic-gw-tok' },
    ]);
    assert.deepEqual(p.metadata.annotations, {
      'cost-center': '42',
      'episodic.dev/gateway-token-sha256': 'hash-of-tok',
    });
    // Without the gateway the defaults' key stays as it was.
    const plain = buildEpisodePod({
      task: t,
      spec: { ...spec, agent: { ...spec.agent, credentials: undefined } },
      episode: 1,
      defaults,
    });
    assert.ok(plain.spec.containers[0].env.some((e: any) => e.name === 'ANTHROPIC_API_KEY' && e.valueFrom));
  });

  it('behind the gateway, codex: the runner is told to write its config.toml in the home emptyDir; no key in the pod', () => {
    const spec = AgentTaskSpecSchema.parse({
      prompt: 'p',
      agent: {
        command: ['codex', 'exec', '--json', '-'],
        credentials: 'openai',
        env: [
          { name: 'OPENAI_API_KEY', value: 'sk-real-literal-key' },
          { name: 'CODEX_HOME', value: '/somewhere/else' },
        ],
      },
    });
    const t: AgentTask = {
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTask',
      metadata: { name: 'demo', namespace: 'ns1', uid: 'uid-1' },
      spec,
    };
    // What the cluster binding gives an openai grant (gateway-binding.ts).
    const env = agentGatewayEnv('openai', 'http://gw:8070/t/ns1/demo', 'episodic-gw-tok', POD_CODEX_HOME);
    const p = buildEpisodePod({ task: t, spec, episode: 1, gateway: { env, tokenSha256: 'h' } });
    const c = p.spec.containers[0];
    const config = EpisodeConfigSchema.parse(JSON.parse(c.env.find((e: any) => e.name === EPISODE_CONFIG_ENV).value));
    assert.deepEqual(config.codexGateway, { home: '/home/episodic/.codex', baseUrl: 'http://gw:8070/t/ns1/demo/v1' });
    assert.deepEqual(
      c.env.filter((e: any) => ['CODEX_HOME', 'OPENAI_API_KEY'].includes(e.name)),
      [
        { name: 'OPENAI_API_KEY', value: 'episodic-gw-tok' },
        { name: 'CODEX_HOME', value: '/home/episodic/.codex' },
      ],
    );
    // CODEX_HOME is under the writable home emptyDir (codex writes its own state beside config.toml).
    assert.ok(c.volumeMounts.some((m: any) => m.name === 'home' && POD_CODEX_HOME.startsWith(`${m.mountPath}/`)));
    assert.deepEqual(
      p.spec.volumes.find((v: any) => v.name === 'home'),
      { name: 'home', emptyDir: {} },
    );
    const whole = JSON.stringify(p);
    assert.ok(!whole.includes('sk-real-literal-key'), 'a provider key is in the pod');
    // The token is in the env only: never in the runner's config (the config.toml it writes holds a URL).
    assert.ok(!JSON.stringify(config).includes('episodic-gw-tok'));
    // Another provider's grant names no codex home: no config is written.
    const claude = buildEpisodePod({
      task: t,
      spec,
      episode: 1,
      gateway: {
        env: agentGatewayEnv('anthropic', 'http://gw:8070/t/ns1/demo', 'tok', POD_CODEX_HOME),
        tokenSha256: 'h',
      },
    });
    const cfg = JSON.parse(claude.spec.containers[0].env.find((e: any) => e.name === EPISODE_CONFIG_ENV).value);
    assert.equal(cfg.codexGateway, undefined);
  });

  it('fills in what the task leaves unset: image, pod-level scheduling fields, labels, env', () => {
    const spec = AgentTaskSpecSchema.parse({ prompt: 'p', agent: { command: ['claude'] } });
    const t: AgentTask = {
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTask',
      metadata: { name: 'demo', namespace: 'ns1', uid: 'uid-1' },
      spec,
    };
    const p = buildEpisodePod({ task: t, spec, episode: 1, defaults });
    const c = p.spec.containers[0];
    assert.equal(c.image, 'agents/claude:2');
    assert.equal(c.imagePullPolicy, 'IfNotPresent');
    assert.deepEqual(c.resources, { requests: { cpu: '500m' }, limits: { memory: '2Gi' } });
    assert.deepEqual(p.spec.imagePullSecrets, [{ name: 'regcred' }]);
    assert.equal(p.spec.serviceAccountName, 'agent');
    assert.equal(p.spec.automountServiceAccountToken, undefined, 'a named service account gets its token');
    assert.equal(p.spec.priorityClassName, 'batch-low');
    assert.deepEqual(p.spec.nodeSelector, { 'episodic.dev/agents': 'true' });
    assert.deepEqual(p.spec.tolerations, [{ key: 'agents', operator: 'Exists', effect: 'NoSchedule' }]);
    assert.deepEqual(p.spec.affinity, { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [] } });
    assert.deepEqual(p.metadata.labels, {
      team: 'ml',
      'episodic.dev/task': 'demo',
      'episodic.dev/episode': '1',
      'app.kubernetes.io/managed-by': 'episodic',
    });
    assert.deepEqual(p.metadata.annotations, { 'cost-center': '42' });
    const env = Object.fromEntries(c.env.map((e: any) => [e.name, e]));
    assert.deepEqual(env.ANTHROPIC_API_KEY, {
      name: 'ANTHROPIC_API_KEY',
      valueFrom: { secretKeyRef: { name: 'agent-keys', key: 'anthropic', optional: true } },
    });
    assert.equal(env.LOG_LEVEL.value, 'debug');
    assert.equal(env.HOME.value, '/home/episodic');
  });

  it('security contexts: the defaults layer over the hardened ones, key by key', () => {
    const { task: t, spec } = task();
    const p = buildEpisodePod({ task: t, spec, episode: 1, defaults });
    assert.deepEqual(p.spec.securityContext, {
      runAsNonRoot: true,
      runAsUser: 1001,
      runAsGroup: 65532,
      fsGroup: 65532,
      seccompProfile: { type: 'RuntimeDefault' },
      fsGroupChangePolicy: 'OnRootMismatch',
    });
    assert.deepEqual(p.spec.containers[0].securityContext, {
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: false,
      capabilities: { drop: ['ALL'] },
    });
  });

  it("the task's own spec wins", () => {
    const { task: t, spec } = task('demo', {
      agent: {
        image: 'img:1',
        command: ['claude'],
        imagePullPolicy: 'Always',
        resources: { limits: { cpu: '1' } },
        serviceAccountName: 'own',
        env: [{ name: 'ANTHROPIC_API_KEY', valueFrom: { secretKeyRef: { name: 'mine', key: 'k' } } }],
      },
    });
    const p = buildEpisodePod({ task: t, spec, episode: 1, defaults });
    const c = p.spec.containers[0];
    assert.equal(c.image, 'img:1');
    assert.equal(c.imagePullPolicy, 'Always');
    assert.deepEqual(c.resources, { limits: { cpu: '1' } });
    assert.equal(p.spec.serviceAccountName, 'own');
    const keys = c.env.filter((e: any) => e.name === 'ANTHROPIC_API_KEY');
    assert.deepEqual(keys, [{ name: 'ANTHROPIC_API_KEY', valueFrom: { secretKeyRef: { name: 'mine', key: 'k' } } }]);
    assert.ok(
      c.env.some((e: any) => e.name === 'LOG_LEVEL'),
      'other default variables still apply',
    );

    const optOut = task('demo', { agent: { image: 'img:1', command: ['claude'], serviceAccountName: '' } });
    const noSa = buildEpisodePod({ ...optOut, episode: 1, defaults });
    assert.equal(noSa.spec.serviceAccountName, undefined, '"" opts out of the default service account');
    assert.equal(noSa.spec.automountServiceAccountToken, false);
  });

  it('pods share no objects with the defaults', () => {
    const { task: t, spec } = task();
    const a = buildEpisodePod({ task: t, spec, episode: 1, defaults });
    a.spec.tolerations.push({ key: 'x' });
    a.spec.containers[0].securityContext.capabilities.drop.push('NET_RAW');
    const b = buildEpisodePod({ task: t, spec, episode: 2, defaults });
    assert.equal(b.spec.tolerations.length, 1);
    assert.deepEqual(b.spec.containers[0].securityContext.capabilities, { drop: ['ALL'] });
  });

  it('rejects a bad file naming the file and the field', () => {
    assert.throws(
      () => parseEpisodeDefaults('nodeSelectr: { a: b }', '/etc/d.yaml'),
      /^Error: \/etc\/d\.yaml: .*Unrecognized key: "nodeSelectr"/,
    );
    assert.throws(
      () => parseEpisodeDefaults('nodeSelector: { a: 1 }', 'd.yaml'),
      /d\.yaml: nodeSelector\.a: .*expected string/,
    );
    assert.throws(
      () => parseEpisodeDefaults('env: [{ name: K, valueFrom: { secretKeyRef: { name: s } } }]', 'd.yaml'),
      /d\.yaml: env\[0\]\.valueFrom\.secretKeyRef\.key/,
    );
    assert.throws(() => parseEpisodeDefaults('imagePullPolicy: Sometimes', 'd.yaml'), /d\.yaml: imagePullPolicy/);
    assert.throws(() => parseEpisodeDefaults('image: [', 'd.yaml'), /d\.yaml: not valid YAML/);
    assert.deepEqual(parseEpisodeDefaults('', 'd.yaml'), {}, 'an empty file: no defaults');
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
    const o = observePod(
      pod(
        {},
        {
          phase: 'Succeeded',
          containerStatuses: [
            { name: 'agent', state: { terminated: { exitCode: 0, message, finishedAt: '2026-01-01T00:05:00Z' } } },
          ],
        },
      ),
      opts,
    );
    assert.equal(o.episode.state, 'finished');
    assert.equal(o.episode.finishedAt, '2026-01-01T00:05:00Z');
    assert.equal(o.episode.result?.completion, 'promise');
    assert.equal(o.episode.result?.costUSD, 0.25);
  });

  it('maps pod-level endings', () => {
    const terminated = (t: any, extra: any = {}) =>
      observePod(
        pod({}, { phase: 'Failed', ...extra, containerStatuses: [{ name: 'agent', state: { terminated: t } }] }),
        opts,
      ).episode.result;
    assert.equal(terminated({ exitCode: 137 }, { reason: 'DeadlineExceeded' })?.timedOut, true);
    const oom = terminated({ exitCode: 137, reason: 'OOMKilled' });
    assert.equal(oom?.errorClass, 'none');
    assert.match(oom?.message ?? '', /OOMKilled/);
    assert.equal(
      terminated({ exitCode: 3, message: 'not json' })?.exitCode,
      3,
      'undecodable → failed with the exit code',
    );
    assert.equal(terminated({ exitCode: 3, message: 'not json' })?.agentError, true);
    const evicted = observePod(pod({}, { phase: 'Failed', reason: 'Evicted', message: 'low memory' }), opts).episode
      .result;
    assert.equal(evicted?.errorClass, 'transient');
    const disrupted = observePod(
      pod({}, { phase: 'Running', conditions: [{ type: 'DisruptionTarget', status: 'True' }] }),
      opts,
    ).episode.result;
    assert.equal(disrupted?.errorClass, 'transient');
  });

  it('a pod being deleted or gone is reported as gone, with who removed it (reconcile decides what that means)', () => {
    const deleting = pod({ deletionTimestamp: '2026-01-01T00:09:00Z' }, { phase: 'Running' });
    assert.deepEqual(
      [
        observePod(deleting, { ...opts, deletedByController: true }).episode.state,
        observePod(deleting, { ...opts, deletedByController: true }).episode.removedBy,
      ],
      ['gone', 'controller'],
    );
    assert.equal(observePod(deleting, opts).episode.removedBy, 'someone-else');
    assert.equal(observeDeletedPod(2, opts).removedBy, 'someone-else');
    assert.equal(observeDeletedPod(2, { ...opts, deletedByController: true }).removedBy, 'controller');
    const finished = pod(
      {},
      { phase: 'Succeeded', containerStatuses: [{ name: 'agent', state: { terminated: { exitCode: 0 } } }] },
    );
    assert.equal(observeDeletedPod(1, opts, finished).state, 'finished', 'a pod seen finished keeps its result');
  });

  it('an image that never pulls is fatal after the grace period, with the kubelet message', () => {
    const waiting = {
      phase: 'Pending',
      containerStatuses: [
        {
          name: 'agent',
          state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "img:1"' } },
        },
      ],
    };
    const young = observePod(pod({ creationTimestamp: '2026-01-01T00:09:00Z' }, waiting), opts);
    assert.equal(young.episode.state, 'running');
    assert.equal(young.episode.recheckAfterMs, 60_000);
    const old = observePod(pod({}, waiting), opts);
    assert.equal(old.episode.result?.errorClass, 'fatal');
    assert.equal(old.episode.result?.message, 'ImagePullBackOff: Back-off pulling image "img:1"');
    assert.equal(old.deletePod, true);
  });

  it('an unschedulable pod keeps the episode waiting', () => {
    const o = observePod(
      pod(
        {},
        {
          phase: 'Pending',
          conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes' }],
        },
      ),
      opts,
    );
    assert.equal(o.episode.state, 'running');
    assert.match(o.episode.unschedulable ?? '', /0\/3 nodes/);
  });
});
