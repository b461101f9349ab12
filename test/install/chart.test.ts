// The Helm chart: lint, what it renders for each kind of install, the CRD copy, the dashboard, and
// (on the real kube-apiserver) that every rendered object is accepted by `kubectl apply --dry-run=server`.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { EpisodicMetrics } from '../../controller/metrics/metrics.ts';
import { CHART_CRDS, SOURCE_CRDS, crdFiles } from '../../scripts/sync-chart-crds.ts';
import { ensureCluster, kubeconfigPath, kubectl, kubectlPath } from '../support/cluster.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import {
  agentTaskManifest,
  clusterWithCrd,
  createNamespace,
  fakeClaudeSpec,
  startControllerProcess,
  testClient,
  waitForPod,
  waitForTask,
} from '../support/kubelet.ts';
import {
  CHART_DIR,
  NAMESPACE,
  controllerContainer,
  controllerFlags,
  find,
  helmCmd,
  mustFind,
  render,
  renderYaml,
  repoRoot,
  skipCluster,
  valueArgs,
} from './support.ts';
import type { K8sObject } from './support.ts';

/** Every optional part switched on (ServiceMonitor aside: it needs the prometheus-operator CRDs). */
const EVERYTHING = {
  replicaCount: 2,
  'dashboard.enabled': true,
  'controller.budgetUSD': 25,
  'controller.extraArgs': ['--watch-timeout=10m'],
  'episodes.image': 'episodic/agent-claude-code:0.1.0',
  'episodes.serviceAccountName': 'agent',
  'episodes.nodeSelector': { 'episodic.dev/agents': 'true' },
  'episodes.tolerations': [{ key: 'agents', operator: 'Exists', effect: 'NoSchedule' }],
  'episodes.apiKeys': [
    { env: 'ANTHROPIC_API_KEY', secretName: 'agent-keys', secretKey: 'anthropic' },
    { env: 'OPENAI_API_KEY', secretName: 'agent-keys', secretKey: 'openai', optional: false },
  ],
  'sandbox.defaultRuntimeClass': 'gvisor',
  'sandbox.enforce': true,
  'sandbox.gateway': { namespace: 'gw', podLabels: { app: 'gateway' }, port: 8080 },
  'sandbox.proxy': { enabled: true, port: 3128 },
};

const VALUE_SETS: Record<string, Record<string, unknown>> = {
  defaults: {},
  watchNamespace: { watchNamespace: 'team-a' },
  everything: EVERYTHING,
  everythingInOneNamespace: { ...EVERYTHING, watchNamespace: 'team-a' },
  console: { 'console.enabled': true, 'console.service.enabled': true, 'console.tokenSecret.name': 'console-token' },
  hooks: { 'hooks.enabled': true, 'rbac.readSecrets': true },
  noRbacNoGuard: {
    'rbac.create': false,
    'specGuard.enabled': false,
    'serviceAccount.create': false,
    'serviceAccount.name': 'byo',
  },
};

const CONTROLLER_RULES = [
  {
    apiGroups: ['episodic.dev'],
    resources: ['agenttasks'],
    verbs: ['get', 'list', 'watch', 'patch', 'create', 'delete'],
  },
  { apiGroups: ['episodic.dev'], resources: ['agenttasks/status'], verbs: ['get', 'patch'] },
  { apiGroups: ['episodic.dev'], resources: ['agenttasks/finalizers'], verbs: ['update'] },
  { apiGroups: ['episodic.dev'], resources: ['agentepisodes'], verbs: ['create', 'list', 'delete'] },
  { apiGroups: ['episodic.dev'], resources: ['agentbudgets'], verbs: ['list', 'watch'] },
  { apiGroups: ['episodic.dev'], resources: ['agentbudgets/status'], verbs: ['patch'] },
  { apiGroups: ['episodic.dev'], resources: ['agenttriggers'], verbs: ['list', 'watch'] },
  { apiGroups: ['episodic.dev'], resources: ['agenttriggers/status'], verbs: ['patch'] },
  // The namespace default AgentCredentials: seen with the gateway off too (its tasks then fail, saying why).
  { apiGroups: ['episodic.dev'], resources: ['agentcredentials'], verbs: ['list', 'watch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'create', 'delete'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  {
    apiGroups: [''],
    resources: ['configmaps'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
  { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['create', 'patch', 'delete'] },
];

describe('helm chart', () => {
  it('passes `helm lint --strict` with every value set', async () => {
    for (const [name, values] of Object.entries({
      ...VALUE_SETS,
      serviceMonitor: { 'metrics.serviceMonitor.enabled': true },
    })) {
      const out = await helmCmd(['lint', '--strict', CHART_DIR, ...valueArgs(values)]);
      assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/, `${name}: ${out}`);
      assert.doesNotMatch(out, /\[(WARNING|ERROR)\]/, `${name}: ${out}`);
    }
  });

  it('ships the generated CRDs unchanged in crds/ (node scripts/sync-chart-crds.ts)', async () => {
    const source = await crdFiles(SOURCE_CRDS);
    assert.deepEqual(await crdFiles(CHART_CRDS), source, 'charts/episodic/crds/ lists other files than crds/');
    for (const file of source) {
      const a = await readFile(path.join(SOURCE_CRDS, file), 'utf8');
      const b = await readFile(path.join(CHART_CRDS, file), 'utf8');
      assert.ok(a === b, `charts/episodic/crds/${file} is stale: run \`node scripts/sync-chart-crds.ts\``);
    }
    // helm template leaves CRDs out unless asked: they are installed once, never templated or deleted.
    assert.equal(find(await render(), 'CustomResourceDefinition'), undefined);
    assert.ok(find(await render({}, ['--include-crds']), 'CustomResourceDefinition', 'agenttasks.episodic.dev'));
    assert.ok(find(await render({}, ['--include-crds']), 'CustomResourceDefinition', 'agentepisodes.episodic.dev'));
  });

  it('versions: appVersion is the package version and the default image tag', async () => {
    const chart = parseYaml(await readFile(path.join(CHART_DIR, 'Chart.yaml'), 'utf8'));
    const pkg = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8'));
    assert.equal(chart.apiVersion, 'v2');
    assert.equal(chart.appVersion, pkg.version);
    assert.equal(controllerContainer(await render()).image, `episodic/episodic:${pkg.version}`);
    const digest = `sha256:${'a'.repeat(64)}`;
    assert.equal(controllerContainer(await render({ 'image.digest': digest })).image, `episodic/episodic@${digest}`);
  });

  it('runs the controller hardened: non-root 65532, read-only root, no privilege escalation, no capabilities', async () => {
    const objects = await render();
    const pod = mustFind(objects, 'Deployment').spec.template.spec;
    assert.equal(pod.serviceAccountName, 'episodic');
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(pod.securityContext.runAsUser, 65532);
    assert.deepEqual(pod.securityContext.seccompProfile, { type: 'RuntimeDefault' });
    const c = controllerContainer(objects);
    assert.equal(c.securityContext.runAsUser, 65532);
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(c.securityContext.capabilities, { drop: ['ALL'] });
    assert.deepEqual(c.securityContext.seccompProfile, { type: 'RuntimeDefault' });
    assert.ok(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory);
    assert.deepEqual(c.livenessProbe.httpGet, { path: '/healthz', port: 'health' });
    assert.deepEqual(c.readinessProbe.httpGet, { path: '/readyz', port: 'health' });
    const ports = Object.fromEntries(c.ports.map((p: any) => [p.name, p.containerPort]));
    assert.deepEqual(ports, { metrics: 8080, health: 8081 });
    assert.ok(c.args.includes('--health-addr=:8081') && c.args.includes('--metrics-addr=:8080'));
    assert.equal(c.args[0], 'controller');
  });

  it('console: off by default; on, it binds the pod loopback (port-forward) unless a Service asks for every interface and a token Secret', async () => {
    const flag = (objects: K8sObject[]) =>
      (controllerContainer(objects).args as string[]).find((a) => a.startsWith('--console-listen'));
    assert.equal(flag(await render()), undefined);
    const local = await render({ 'console.enabled': true });
    assert.equal(flag(local), '--console-listen=127.0.0.1:8090');
    assert.equal(find(local, 'Service', 'episodic-console'), undefined);
    await assert.rejects(
      render({ 'console.enabled': true, 'console.service.enabled': true }),
      /console.service.enabled exposes the console beyond the pod: set console.tokenSecret.name/,
    );
    const exposed = await render(VALUE_SETS.console);
    assert.equal(flag(exposed), '--console-listen=0.0.0.0:8090');
    assert.equal(mustFind(exposed, 'Service', 'episodic-console').spec.ports[0].targetPort, 'console');
    const env = controllerContainer(exposed).env.find((e: { name: string }) => e.name === 'EPISODIC_CONSOLE_TOKEN');
    assert.deepEqual(env.valueFrom.secretKeyRef, { name: 'console-token', key: 'token' });
  });

  it('hooks: off by default; on, a Service and --hooks-addr on every interface (loopback without it); needs rbac.readSecrets', async () => {
    const flag = (objects: K8sObject[]) =>
      (controllerContainer(objects).args as string[]).find((a) => a.startsWith('--hooks-addr'));
    assert.equal(flag(await render()), undefined);
    assert.equal(find(await render(), 'Service', 'episodic-hooks'), undefined);
    await assert.rejects(render({ 'hooks.enabled': true }), /hooks.enabled: .* set rbac.readSecrets=true/);
    const on = await render(VALUE_SETS.hooks);
    assert.equal(flag(on), '--hooks-addr=0.0.0.0:8092');
    assert.equal(mustFind(on, 'Service', 'episodic-hooks').spec.ports[0].targetPort, 'hooks');
    assert.ok(controllerContainer(on).ports.some((p: { name: string }) => p.name === 'hooks'));
    const local = await render({ ...VALUE_SETS.hooks, 'hooks.service.enabled': false });
    assert.equal(flag(local), '--hooks-addr=127.0.0.1:8092');
    assert.equal(find(local, 'Service', 'episodic-hooks'), undefined);
  });

  it('passes only flags the real `episodic controller` accepts', async () => {
    const known = await controllerFlags();
    for (const [name, values] of Object.entries(VALUE_SETS)) {
      for (const arg of controllerContainer(await render(values)).args.slice(1) as string[]) {
        const flag = arg.split('=')[0];
        assert.ok(known.has(flag), `${name}: ${flag} is not a flag of \`episodic controller\``);
      }
    }
  });

  it('episode-pod defaults reach the controller (--episode-defaults) and its episode pods', {
    skip: skipCluster,
    timeout: SUITE_HANG_GUARD_MS,
  }, async () => {
    const values = {
      'episodes.image': 'episodic/agent-claude-code:0.1.0',
      'episodes.nodeSelector': { 'episodic.dev/agents': 'true' },
      'episodes.tolerations': [{ key: 'agents', operator: 'Exists', effect: 'NoSchedule' }],
      'episodes.securityContext': { readOnlyRootFilesystem: false },
      'episodes.resources': { requests: { cpu: 1, memory: '1Gi' } },
      'episodes.apiKeys': [{ env: 'ANTHROPIC_API_KEY', secretName: 'agent-keys', secretKey: 'anthropic' }],
    };
    const objects = await render(values);
    const args: string[] = controllerContainer(objects).args;
    const flag = args.find((a) => a.startsWith('--episode-defaults='));
    assert.equal(flag, '--episode-defaults=/etc/episodic/episode-defaults.yaml');
    // The file the ConfigMap mounts at that path, handed to the real controller against the real apiserver.
    const dir = await mkdtemp(path.join(tmpdir(), 'episodic-chart-'));
    const file = path.join(dir, 'episode-defaults.yaml');
    await writeFile(file, mustFind(objects, 'ConfigMap', 'episodic-episode-defaults').data['episode-defaults.yaml']);
    const cluster = await clusterWithCrd();
    const client = await testClient(cluster);
    const ns = await createNamespace('chart-defaults');
    const proc = await startControllerProcess(cluster, ['--namespace', ns, `--episode-defaults=${file}`]);
    try {
      const spec = fakeClaudeSpec();
      delete (spec.agent as Record<string, unknown>).image;
      await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'no-image', spec) });
      const pod = await waitForPod(client, ns, 'no-image-ep-1', 30_000);
      const c = pod.spec.containers[0];
      assert.equal(c.image, 'episodic/agent-claude-code:0.1.0');
      assert.deepEqual(pod.spec.nodeSelector, { 'episodic.dev/agents': 'true' });
      // The API server's DefaultTolerationSeconds admission adds its own tolerations after ours.
      assert.deepEqual(pod.spec.tolerations[0], { key: 'agents', operator: 'Exists', effect: 'NoSchedule' });
      assert.deepEqual(c.resources.requests, { cpu: '1', memory: '1Gi' });
      const key = c.env.find((e: any) => e.name === 'ANTHROPIC_API_KEY');
      assert.deepEqual(key, {
        name: 'ANTHROPIC_API_KEY',
        valueFrom: { secretKeyRef: { name: 'agent-keys', key: 'anthropic', optional: true } },
      });
      assert.deepEqual(c.securityContext, {
        runAsNonRoot: true,
        runAsUser: 65532,
        runAsGroup: 65532,
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: false,
        capabilities: { drop: ['ALL'] },
      });
      assert.deepEqual(
        pod.spec.securityContext.seccompProfile,
        { type: 'RuntimeDefault' },
        'the hardened pod default stays',
      );
      const task = await waitForTask(client, ns, 'no-image', (st) => st.phase === 'Running');
      assert.equal(task.status?.currentEpisode?.podName, 'no-image-ep-1');
    } finally {
      await proc.kill('SIGTERM');
      client.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('one replica: no leader election and a Recreate rollout; more: --leader-elect and a Lease Role', async () => {
    const one = await render();
    assert.ok(!controllerContainer(one).args.includes('--leader-elect'));
    assert.equal(mustFind(one, 'Deployment').spec.strategy.type, 'Recreate');
    assert.equal(find(one, 'Role'), undefined);

    const two = await render({ replicaCount: 2 });
    const args: string[] = controllerContainer(two).args;
    assert.ok(args.includes('--leader-elect'));
    assert.ok(args.includes(`--leader-election-namespace=${NAMESPACE}`));
    assert.equal(mustFind(two, 'Deployment').spec.strategy.rollingUpdate.maxUnavailable, 0);
    const lease = mustFind(two, 'Role', 'episodic-leader-election');
    assert.equal(lease.metadata.namespace, NAMESPACE);
    assert.deepEqual(lease.rules, [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['episodic-controller'],
        verbs: ['get', 'update'],
      },
    ]);
    assert.equal(mustFind(two, 'RoleBinding', 'episodic-leader-election').roleRef.name, 'episodic-leader-election');
    assert.ok(controllerContainer(await render({ 'leaderElection.enabled': true })).args.includes('--leader-elect'));
  });

  it('all namespaces: a ClusterRole with exactly the verbs the controller uses', async () => {
    const objects = await render();
    const role = mustFind(objects, 'ClusterRole', 'episodic');
    assert.deepEqual(role.rules, CONTROLLER_RULES);
    const binding = mustFind(objects, 'ClusterRoleBinding', 'episodic');
    assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'episodic' });
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'episodic', namespace: NAMESPACE }]);
    const text = JSON.stringify(objects.filter((o) => /Role/.test(o.kind)));
    assert.doesNotMatch(text, /secrets|"\*"|nodes|deployments|escalate|bind|impersonate/);
    assert.ok(!controllerContainer(objects).args.some((a: string) => a.startsWith('--namespace')));
  });

  it('console.enabled: the role may also read pods/log (episode logs), in both scopes; nothing else changes', async () => {
    const podLog = { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] };
    const withLogs = [...CONTROLLER_RULES];
    withLogs.splice(withLogs.findIndex((r) => r.resources[0] === 'pods') + 1, 0, podLog);
    assert.deepEqual(mustFind(await render({ 'console.enabled': true }), 'ClusterRole', 'episodic').rules, withLogs);
    const scoped = await render({ 'console.enabled': true, watchNamespace: 'team-a' });
    assert.deepEqual(mustFind(scoped, 'Role', 'episodic').rules, withLogs);
  });

  it('watchNamespace: a Role and RoleBinding in that namespace, nothing cluster-wide, --namespace passed', async () => {
    const objects = await render({ watchNamespace: 'team-a' });
    assert.equal(find(objects, 'ClusterRole'), undefined);
    assert.equal(find(objects, 'ClusterRoleBinding'), undefined);
    const role = mustFind(objects, 'Role', 'episodic');
    assert.equal(role.metadata.namespace, 'team-a');
    assert.deepEqual(role.rules, CONTROLLER_RULES);
    const binding = mustFind(objects, 'RoleBinding', 'episodic');
    assert.equal(binding.metadata.namespace, 'team-a');
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'episodic', namespace: NAMESPACE }]);
    assert.ok(controllerContainer(objects).args.includes('--namespace=team-a'));
  });

  it('spec guard: a ValidatingAdmissionPolicy bound to the controller ServiceAccount only', async () => {
    const objects = await render();
    const policy = mustFind(objects, 'ValidatingAdmissionPolicy', 'episodic-spec-guard');
    assert.deepEqual(policy.spec.matchConstraints.resourceRules[0].resources, ['agenttasks']);
    assert.deepEqual(policy.spec.matchConstraints.resourceRules[0].operations, ['CREATE', 'UPDATE']);
    assert.equal(
      policy.spec.matchConditions[0].expression,
      `request.userInfo.username == "system:serviceaccount:${NAMESPACE}:episodic"`,
    );
    assert.equal(policy.spec.failurePolicy, 'Fail');
    assert.deepEqual(mustFind(objects, 'ValidatingAdmissionPolicyBinding').spec, {
      policyName: 'episodic-spec-guard',
      validationActions: ['Deny'],
    });
    assert.equal(find(await render({ 'specGuard.enabled': false }), 'ValidatingAdmissionPolicy'), undefined);
  });

  it('metrics: a Service always, a ServiceMonitor only when asked', async () => {
    const objects = await render();
    const svc = mustFind(objects, 'Service', 'episodic-metrics');
    assert.deepEqual(svc.spec.ports, [{ name: 'metrics', port: 8080, targetPort: 'metrics', protocol: 'TCP' }]);
    assert.deepEqual(svc.spec.selector, mustFind(objects, 'Deployment').spec.selector.matchLabels);
    assert.equal(find(objects, 'ServiceMonitor'), undefined);
    const sm = mustFind(
      await render({ 'metrics.serviceMonitor.enabled': true, 'metrics.serviceMonitor.labels': { release: 'prom' } }),
      'ServiceMonitor',
    );
    assert.equal(sm.apiVersion, 'monitoring.coreos.com/v1');
    assert.equal(sm.metadata.labels?.release, 'prom');
    assert.equal(sm.spec.endpoints[0].port, 'metrics');
    assert.deepEqual(sm.spec.selector.matchLabels, svc.spec.selector);
  });

  it('episode-pod defaults: rendered for the controller; API keys only as Secret references', async () => {
    assert.equal(find(await render(), 'ConfigMap'), undefined, 'nothing to render with all defaults empty');
    const objects = await render(EVERYTHING);
    const cm = mustFind(objects, 'ConfigMap', 'episodic-episode-defaults');
    const defaults = parseYaml(cm.data['episode-defaults.yaml']);
    assert.deepEqual(defaults, {
      image: 'episodic/agent-claude-code:0.1.0',
      serviceAccountName: 'agent',
      nodeSelector: { 'episodic.dev/agents': 'true' },
      tolerations: [{ key: 'agents', operator: 'Exists', effect: 'NoSchedule' }],
      env: [
        {
          name: 'ANTHROPIC_API_KEY',
          valueFrom: { secretKeyRef: { name: 'agent-keys', key: 'anthropic', optional: true } },
        },
        { name: 'OPENAI_API_KEY', valueFrom: { secretKeyRef: { name: 'agent-keys', key: 'openai', optional: false } } },
      ],
      sandbox: {
        runtimeClassName: 'gvisor',
        enforce: true,
        gateway: { namespace: 'gw', podLabels: { app: 'gateway' }, port: 8080 },
        proxy: {
          host: `episodic-sandbox-proxy.${NAMESPACE}.svc`,
          port: 3128,
          namespace: NAMESPACE,
          podLabels: { 'app.kubernetes.io/name': 'episodic', 'app.kubernetes.io/instance': 'episodic' },
        },
      },
    });
    const c = controllerContainer(objects);
    assert.ok(c.args.includes('--episode-defaults=/etc/episodic/episode-defaults.yaml'));
    assert.deepEqual(c.volumeMounts, [
      { name: 'tmp', mountPath: '/tmp' },
      { name: 'episode-defaults', mountPath: '/etc/episodic', readOnly: true },
    ]);
    assert.match(
      mustFind(objects, 'Deployment').spec.template.metadata.annotations['checksum/episode-defaults'],
      /^[a-f0-9]{64}$/,
    );
    assert.ok(c.args.includes('--pod-retention=3'));
  });

  it('values.schema.json rejects typos, inline secrets and bad values', async () => {
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ replicaCont: 2 }, /additional properties 'replicaCont'/],
      [
        { 'episodes.apiKeys': [{ env: 'ANTHROPIC_API_KEY', value: 'sk-ant-123' }] },
        /additional properties 'value'|missing properties/,
      ],
      [{ 'controller.logLevel': 'loud' }, /logLevel/],
      [{ watchNamespace: 'Team_A' }, /watchNamespace/],
      [{ 'leaderElection.leaseDuration': 'forever' }, /leaseDuration/],
      [{ 'controller.maxConcurrent': 0 }, /maxConcurrent/],
    ];
    for (const [values, message] of bad) {
      await assert.rejects(renderYaml(values), message, JSON.stringify(values));
    }
  });

  it('NOTES.txt tells how to apply a first AgentTask and watch it', async () => {
    const out = await helmCmd(['install', 'episodic', CHART_DIR, '--namespace', NAMESPACE, '--dry-run=client']);
    assert.match(out, /kind: AgentTask/);
    assert.match(out, /kubectl -n default get at -w/);
    assert.match(out, /secretKeyRef/);
    // Tasks first, while the controller can still remove its finalizer; the CRDs last (the other order hangs).
    assert.match(
      out,
      /kubectl delete agenttasks --all -A\n\s+helm uninstall episodic -n episodic-system\n\s+kubectl delete crd agenttasks\.episodic\.dev agentepisodes\.episodic\.dev agentbudgets\.episodic\.dev agenttriggers\.episodic\.dev/,
    );
    const scoped = await helmCmd([
      'install',
      'episodic',
      CHART_DIR,
      '--namespace',
      NAMESPACE,
      '--dry-run=client',
      '--set',
      'watchNamespace=team-a',
    ]);
    assert.match(scoped, /kubectl -n team-a get at -w/);
  });
});

describe('grafana dashboard', () => {
  let dashboard: any;
  let exprs: string[];

  before(async () => {
    const cm = mustFind(await render({ 'dashboard.enabled': true }), 'ConfigMap', 'episodic-dashboard');
    assert.equal(cm.metadata.labels?.grafana_dashboard, '1');
    dashboard = JSON.parse(cm.data['episodic.json']);
    const onDisk = JSON.parse(await readFile(path.join(CHART_DIR, 'dashboards', 'episodic.json'), 'utf8'));
    assert.deepEqual(dashboard, onDisk, 'the ConfigMap carries dashboards/episodic.json verbatim');
    exprs = dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr as string));
  });

  it('is templated: a Prometheus datasource variable and a multi-select namespace variable', () => {
    const vars = Object.fromEntries(dashboard.templating.list.map((v: any) => [v.name, v]));
    assert.equal(vars.datasource.type, 'datasource');
    assert.equal(vars.datasource.query, 'prometheus');
    assert.equal(vars.namespace.type, 'query');
    assert.equal(vars.namespace.multi, true);
    assert.equal(vars.namespace.includeAll, true);
    for (const panel of dashboard.panels.filter((p: any) => p.type !== 'row')) {
      assert.equal(panel.datasource.uid, '${datasource}', `panel ${panel.title}`);
      for (const t of panel.targets) assert.equal(t.datasource.uid, '${datasource}', `panel ${panel.title}`);
    }
    assert.ok(dashboard.uid && dashboard.title && dashboard.schemaVersion >= 36);
  });

  it('charts every metric the issue asks for', () => {
    const wanted: Array<[string, RegExp]> = [
      ['cost per namespace', /sum by \(namespace\) \(rate\(episodic_cost_usd_total\{namespace=~"\$namespace"\}/],
      ['tokens by kind', /sum by \(kind\) \(rate\(episodic_tokens_total\{namespace=~"\$namespace"\}/],
      ['episodes by outcome', /sum by \(outcome\) \(increase\(episodic_episodes_total\{/],
      ['retries by reason', /sum by \(reason\) \(increase\(episodic_episode_retries_total\{/],
      ['skipped tasks', /episodic_tasks_skipped_total\{/],
      ['duration p50', /histogram_quantile\(0\.5, sum by \(le\) \(rate\(episodic_episode_duration_seconds_bucket\{/],
      ['duration p90', /histogram_quantile\(0\.9, /],
      ['duration p99', /histogram_quantile\(0\.99, /],
      ['tasks by phase', /sum by \(phase\) \(max by \(namespace, phase\) \(episodic_tasks\{/],
      ['breaker transitions', /sum by \(to, rule\) \(increase\(episodic_breaker_transitions_total\{/],
      ['tasks waiting by reason', /sum by \(reason\) \(max by \(namespace, reason\) \(episodic_tasks_waiting\{/],
      ['auto-resumes by policy', /sum by \(policy\) \(increase\(episodic_auto_resumes_total\{/],
      ['budget spent', /max by \(namespace, name\) \(episodic_budget_spent_usd\{/],
      ['budget remaining', /max by \(namespace, name\) \(episodic_budget_remaining_usd\{/],
      ['tasks held by budgets', /max by \(namespace, name\) \(episodic_budget_tasks_held\{/],
    ];
    for (const [what, re] of wanted)
      assert.ok(
        exprs.some((e) => re.test(e)),
        `no panel for ${what}`,
      );
  });

  it('only queries metrics the controller exports, with their real labels', async () => {
    const metrics = new EpisodicMetrics({ defaultMetrics: false });
    const exported = new Map<string, { type: string; labels: string[] }>();
    for (const m of (await metrics.registry.getMetricsAsJSON()) as any[]) {
      const labels = (metrics.registry.getSingleMetric(m.name) as any).labelNames as string[];
      exported.set(m.name, { type: m.type, labels });
    }
    for (const expr of exprs) {
      for (const [, name] of expr.matchAll(/\b(episodic_[a-z_]+)/g)) {
        const base = name.replace(/_(bucket|sum|count)$/, '');
        const metric = exported.get(name) ?? exported.get(base);
        assert.ok(metric, `${name} (in ${expr}) is not exported by controller/metrics/metrics.ts`);
        if (name !== base) assert.equal(metric.type, 'histogram', name);
        for (const [, label] of expr.matchAll(/(?:by \(|,\s*)([a-z_]+)(?=[,)])/g)) {
          if (label === 'le') continue;
          assert.ok(metric.labels.includes(label), `${name} has no label "${label}" (in ${expr})`);
        }
        if (expr.includes(`${name}{namespace=~`)) assert.ok(metric.labels.includes('namespace'), name);
      }
    }
  });

  it('lays panels out on the 24-column grid without overlaps', () => {
    const cells = new Set<string>();
    for (const p of dashboard.panels) {
      const { x, y, w, h } = p.gridPos;
      assert.ok(x + w <= 24, `panel ${p.title} is wider than the grid`);
      for (let i = x; i < x + w; i++) {
        for (let j = y; j < y + h; j++) {
          const key = `${i},${j}`;
          assert.ok(!cells.has(key), `panel ${p.title} overlaps another at ${key}`);
          cells.add(key);
        }
      }
    }
    assert.equal(new Set(dashboard.panels.map((p: any) => p.id)).size, dashboard.panels.length, 'panel ids are unique');
  });
});

/** kubectl that also returns stderr (warnings) on success. */
async function kubectlWithStderr(args: string[], input: string): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(kubectlPath, ['--kubeconfig', kubeconfigPath, ...args], (err, stdout, stderr) => {
      if (err) reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`));
      else resolve({ stdout, stderr });
    });
    child.stdin?.end(input);
  });
}

describe('helm chart on a real kube-apiserver (kubectl apply --dry-run=server)', { skip: skipCluster }, () => {
  before(async () => {
    await ensureCluster();
    // CRDs for real (dry-run cannot create the types the rest refers to); namespaces too, since a dry-run
    // into a missing namespace fails. Neither is ever deleted: namespaces cannot be, here (no GC).
    await kubectl(['apply', '--server-side', '--force-conflicts', '-f', path.join(CHART_DIR, 'crds')]);
    await kubectl([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/agenttasks.episodic.dev',
      'crd/agentepisodes.episodic.dev',
      'crd/agentbudgets.episodic.dev',
      'crd/agenttriggers.episodic.dev',
    ]);
    for (const ns of [NAMESPACE, 'team-a']) {
      await kubectl(['create', 'namespace', ns, '--dry-run=client', '-o', 'yaml']).then((y) =>
        kubectl(['apply', '-f', '-'], { input: y }),
      );
    }
  });

  for (const [name, values] of Object.entries(VALUE_SETS)) {
    it(`accepts every object (${name})`, async () => {
      const yaml = await renderYaml(values);
      const objects: K8sObject[] = (await render(values)).filter((o) => o.kind !== 'ServiceMonitor');
      const out = await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: yaml });
      for (const o of objects) {
        assert.match(
          out,
          new RegExp(
            `${o.kind.toLowerCase()}[^ ]*/${o.metadata.name} (created|configured|unchanged) \\(server dry run\\)`,
            'i',
          ),
          `${o.kind}/${o.metadata.name}: ${out}`,
        );
      }
    });
  }

  it('the controller pod passes the "restricted" Pod Security Standard (enforced by the API server)', async () => {
    const ns = 'episodic-psa-restricted';
    await kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          name: ns,
          labels: {
            'pod-security.kubernetes.io/enforce': 'restricted',
            'pod-security.kubernetes.io/enforce-version': 'latest',
          },
        },
      }),
    });
    const template = mustFind(await render({ replicaCount: 2, 'dashboard.enabled': true }), 'Deployment').spec.template;
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'episodic-psa-check', namespace: ns, labels: template.metadata.labels },
      spec: { ...template.spec, serviceAccountName: undefined },
    };
    // A violation is a hard error here (enforce), and would also print a warning.
    const { stdout, stderr } = await kubectlWithStderr(['apply', '--dry-run=server', '-f', '-'], JSON.stringify(pod));
    assert.match(stdout, /pod\/episodic-psa-check created \(server dry run\)/);
    assert.doesNotMatch(stderr, /Warning/i, stderr);
    // And the check is real: the same pod running as root is refused.
    const rootPod = structuredClone(pod);
    rootPod.spec.securityContext = { ...rootPod.spec.securityContext, runAsNonRoot: false, runAsUser: 0 };
    rootPod.spec.containers[0].securityContext = {
      ...rootPod.spec.containers[0].securityContext,
      runAsNonRoot: false,
      runAsUser: 0,
    };
    await assert.rejects(
      kubectl(['apply', '--dry-run=server', '-f', '-'], { input: JSON.stringify(rootPod) }),
      /violates PodSecurity "restricted/,
    );
  });

  it('the chart crds/ dir has exactly the CRDs the cluster now serves', async () => {
    const files = await readdir(path.join(CHART_DIR, 'crds'));
    const names = files.map((f) =>
      f
        .replace(/\.ya?ml$/, '')
        .split('_')
        .reverse()
        .join('.'),
    );
    const served = (await kubectl(['get', 'crd', '-o', 'name']))
      .split('\n')
      .map((l) => l.replace(/^customresourcedefinition\.apiextensions\.k8s\.io\//, ''));
    for (const n of names) assert.ok(served.includes(n), `${n} not served`);
  });
});
