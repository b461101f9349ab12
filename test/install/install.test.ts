// Installing episodic on the real kube-apiserver (scripts/cluster/up.sh), in the order a user would:
//   1. `helm install` into episodic-system creates every object;
//   2. RBAC is proven with `kubectl auth can-i`, both as the ServiceAccount's real token and with --as:
//      each verb the controller uses is allowed, everything else asked about is not;
//   3. the spec guard (ValidatingAdmissionPolicy) stops the ServiceAccount from writing spec or labels;
//   4. the controller, started with the Deployment's own args and authenticated AS the chart's
//      ServiceAccount, runs an AgentTask end to end (the test plays the kubelet), and leaves everything a
//      GitOps tool owns untouched (generation, spec, managedFields);
//   5. `helm uninstall` removes it all but the CRD; a watchNamespace install is namespace-scoped;
//   6. `kubectl apply --server-side -k manifests/` installs the same objects.
// One file, run in sequence: the steps share cluster-wide names (ClusterRole "episodic", the
// episodic-system namespace). Set EPISODIC_SKIP_CLUSTER=1 to skip.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { ensureCluster, helm, kubeconfigPath, kubectl } from '../support/cluster.ts';
import type { Cluster } from '../support/cluster.ts';
import { FAKE_CLAUDE, FakeKubelet, NODE, testClient } from '../support/kubelet.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { CHART_DIR, NAMESPACE, RELEASE, SA_USER, repoRoot, skipCluster } from './support.ts';
import { waitFor } from '../support/wait.ts';
import { cliEntry } from '../support/cli-entry.ts';

const SCOPED_RELEASE = 'episodic-scoped';
const SCOPED_NAMESPACE = 'episodic-scoped-system';
const FIELD_MANAGER = 'episodic-controller';
/** The field manager a GitOps tool applies with (Flux's kustomize-controller; Argo CD's is argocd-controller). */
const GITOPS_MANAGER = 'kustomize-controller';

const rand = () => `${Date.now().toString(36)}-${randomBytes(2).toString('hex')}`;

async function ensureNamespace(ns: string): Promise<void> {
  const yaml = await kubectl(['create', 'namespace', ns, '--dry-run=client', '-o', 'yaml']);
  await kubectl(['apply', '-f', '-'], { input: yaml });
}

async function exists(kind: string, name: string, ns?: string): Promise<boolean> {
  const out = await kubectl(['get', kind, name, '--ignore-not-found', '-o', 'name', ...(ns ? ['-n', ns] : [])]);
  return out.trim() !== '';
}

/** A kubeconfig that authenticates with nothing but this ServiceAccount token. */
async function tokenKubeconfig(cluster: Cluster, dir: string, sa: string, ns: string): Promise<string> {
  const token = (await kubectl(['create', 'token', sa, '-n', ns, '--duration=1h'])).trim();
  const admin = parseYaml(await readFile(kubeconfigPath, 'utf8'));
  const clusterEntry = admin.clusters[0].cluster;
  const file = path.join(dir, `${sa}.kubeconfig`);
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'test',
        cluster: {
          server: cluster.server || clusterEntry.server,
          'certificate-authority-data': clusterEntry['certificate-authority-data'],
        },
      },
    ],
    users: [{ name: sa, user: { token } }],
    contexts: [{ name: sa, context: { cluster: 'test', user: sa } }],
    'current-context': sa,
  };
  await writeFile(file, JSON.stringify(config), { mode: 0o600 });
  return file;
}

interface Check {
  verb: string;
  resource: string;
  subresource?: string;
  name?: string;
  /** A namespace, or undefined for --all-namespaces / cluster-scoped. */
  ns?: string;
  expect: boolean;
}

type Identity = { label: string; args: string[] };

/** The SelfSubjectAccessReview `kubectl auth can-i` sends: "pods" is core, "leases.coordination.k8s.io" is grouped. */
function accessReview(c: Check): object {
  const dot = c.resource.indexOf('.');
  const resourceAttributes = {
    verb: c.verb,
    resource: dot < 0 ? c.resource : c.resource.slice(0, dot),
    ...(dot < 0 ? {} : { group: c.resource.slice(dot + 1) }),
    ...(c.subresource ? { subresource: c.subresource } : {}),
    ...(c.name ? { name: c.name } : {}),
    ...(c.ns ? { namespace: c.ns } : {}),
  };
  return { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes } };
}

/** Every check's answer from the real authorizer, as this identity: one kubectl process for the whole list
 * (a process per `kubectl auth can-i` cost the file over a minute). */
async function canIAll(identity: Identity, checks: Check[]): Promise<boolean[]> {
  const reviews = checks.map(accessReview);
  const input = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: reviews });
  const out = await kubectl([...identity.args, 'create', '-f', '-', '-o', 'yaml'], { input });
  const answers = parseAllDocuments(out).map((d) => d.toJS() as any);
  assert.equal(answers.length, checks.length, `one review per check from ${identity.label}:\n${out.slice(0, 2000)}`);
  return answers.map((a, i) => {
    // kubectl creates a List's items in order; the echoed spec proves which answer is whose.
    assert.deepEqual(a.spec, (reviews[i] as any).spec, `review ${i} of ${identity.label} out of order`);
    if (a.status?.evaluationError) throw new Error(`${identity.label}: ${a.status.evaluationError}`);
    return a.status?.allowed === true;
  });
}

async function assertMatrix(identities: Identity[], checks: Check[]): Promise<void> {
  const failures: string[] = [];
  await Promise.all(
    identities.map(async (id) => {
      const got = await canIAll(id, checks);
      checks.forEach((c, i) => {
        if (got[i] !== c.expect) {
          const what = `${c.verb} ${c.resource}${c.subresource ? `/${c.subresource}` : ''}${c.name ? ` ${c.name}` : ''} in ${c.ns ?? '(all namespaces)'}`;
          failures.push(`${id.label}: can-i ${what} = ${got[i] ? 'yes' : 'no'}, want ${c.expect ? 'yes' : 'no'}`);
        }
      });
    }),
  );
  assert.deepEqual(failures.sort(), []);
}

/** The verbs the controller uses (controller/cluster/*.ts), in one namespace or all of them. */
function controllerNeeds(ns: string | undefined): Check[] {
  const yes = (verb: string, resource: string, subresource?: string): Check => ({
    verb,
    resource,
    subresource,
    ns,
    expect: true,
  });
  return [
    ...['get', 'list', 'watch', 'patch', 'create', 'delete'].map((v) => yes(v, 'agenttasks.episodic.dev')),
    yes('get', 'agenttasks.episodic.dev', 'status'),
    yes('patch', 'agenttasks.episodic.dev', 'status'),
    yes('update', 'agenttasks.episodic.dev', 'finalizers'),
    ...['create', 'list', 'delete'].map((v) => yes(v, 'agentepisodes.episodic.dev')),
    ...['list', 'watch'].map((v) => yes(v, 'agentbudgets.episodic.dev')),
    yes('patch', 'agentbudgets.episodic.dev', 'status'),
    ...['list', 'watch'].map((v) => yes(v, 'agenttriggers.episodic.dev')),
    yes('patch', 'agenttriggers.episodic.dev', 'status'),
    ...['get', 'list', 'watch', 'create', 'delete'].map((v) => yes(v, 'pods')),
    yes('create', 'events'),
    yes('patch', 'events'),
    // Agent ops: the blackboard ConfigMap per namespace and each task's mailbox ConfigMap (list/watch: the
    // mailbox informer; RBAC cannot narrow them to its label selector, and get was cluster-wide already).
    ...['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'].map((v) => yes(v, 'configmaps')),
    // spec.sandbox: each sandboxed task's NetworkPolicy.
    ...['create', 'patch', 'delete'].map((v) => yes(v, 'networkpolicies.networking.k8s.io')),
  ];
}

/** What the controller never does, so its ServiceAccount must not be able to. */
function controllerMustNot(ns: string | undefined): Check[] {
  const no = (verb: string, resource: string, subresource?: string, at: string | undefined = ns): Check => ({
    verb,
    resource,
    subresource,
    ns: at,
    expect: false,
  });
  return [
    // AgentTasks: created and deleted only as the system's own (children, trigger items); never updated.
    no('update', 'agenttasks.episodic.dev'),
    no('deletecollection', 'agenttasks.episodic.dev'),
    no('update', 'agenttasks.episodic.dev', 'status'),
    // Episode records: written once, listed to prune, deleted; never changed, cached or read one by one.
    no('update', 'agentepisodes.episodic.dev'),
    no('patch', 'agentepisodes.episodic.dev'),
    no('get', 'agentepisodes.episodic.dev'),
    no('watch', 'agentepisodes.episodic.dev'),
    no('deletecollection', 'agentepisodes.episodic.dev'),
    // Pods: only create and delete. Status is the kubelet's; exec/logs/eviction are not needed.
    no('update', 'pods'),
    no('patch', 'pods'),
    no('deletecollection', 'pods'),
    no('patch', 'pods', 'status'),
    no('update', 'pods', 'status'),
    no('create', 'pods', 'exec'),
    no('get', 'pods', 'log'),
    no('create', 'pods', 'eviction'),
    // Secrets: API keys reach pods via secretKeyRef; the controller never reads them.
    no('get', 'secrets'),
    no('list', 'secrets'),
    no('watch', 'secrets'),
    no('get', 'secrets', undefined, undefined),
    no('list', 'secrets', undefined, undefined),
    no('create', 'serviceaccounts', 'token'),
    no('create', 'events.events.k8s.io'),
    no('update', 'events'),
    no('delete', 'events'),
    no('create', 'deployments.apps'),
    no('create', 'jobs.batch'),
    no('create', 'persistentvolumeclaims'),
    no('create', 'leases.coordination.k8s.io', undefined, NAMESPACE),
    // Cluster-scoped and escalation paths.
    no('get', 'nodes', undefined, undefined),
    no('delete', 'nodes', undefined, undefined),
    no('create', 'namespaces', undefined, undefined),
    no('delete', 'namespaces', undefined, undefined),
    no('create', 'clusterrolebindings.rbac.authorization.k8s.io', undefined, undefined),
    no('escalate', 'clusterroles.rbac.authorization.k8s.io', undefined, undefined),
    no('bind', 'clusterroles.rbac.authorization.k8s.io', undefined, undefined),
    no('impersonate', 'users', undefined, undefined),
    no('impersonate', 'serviceaccounts'),
    no('update', 'customresourcedefinitions.apiextensions.k8s.io', undefined, undefined),
    no('delete', 'customresourcedefinitions.apiextensions.k8s.io', undefined, undefined),
    no('delete', 'validatingadmissionpolicies.admissionregistration.k8s.io', undefined, undefined),
    no('update', 'validatingadmissionpolicybindings.admissionregistration.k8s.io', undefined, undefined),
  ];
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** The objects a default install creates: [kind, name, namespace?]. */
const INSTALLED: Array<[string, string, string?]> = [
  ['serviceaccount', 'episodic', NAMESPACE],
  ['clusterrole', 'episodic'],
  ['clusterrolebinding', 'episodic'],
  ['validatingadmissionpolicy', 'episodic-spec-guard'],
  ['validatingadmissionpolicybinding', 'episodic-spec-guard'],
  ['service', 'episodic-metrics', NAMESPACE],
  ['deployment', 'episodic', NAMESPACE],
];

/** Removes what an earlier (interrupted) run may have left. Never the CRD or a namespace. */
async function cleanUp(): Promise<void> {
  for (const [release, ns] of [
    [RELEASE, NAMESPACE],
    [SCOPED_RELEASE, SCOPED_NAMESPACE],
  ]) {
    await helm(['uninstall', release, '-n', ns, '--ignore-not-found']).catch(() => undefined);
  }
  const selector = 'app.kubernetes.io/part-of=episodic,app.kubernetes.io/managed-by=kustomize';
  await kubectl([
    'delete',
    'deployment,service,serviceaccount',
    '-n',
    NAMESPACE,
    '-l',
    selector,
    '--ignore-not-found',
    '--wait=false',
  ]);
  await kubectl([
    'delete',
    'clusterrole,clusterrolebinding,validatingadmissionpolicy,validatingadmissionpolicybinding',
    '-l',
    selector,
    '--ignore-not-found',
    '--wait=false',
  ]);
  await kubectl(['delete', 'lease', 'episodic-controller', '-n', NAMESPACE, '--ignore-not-found']);
}

describe('install on a real kube-apiserver', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let cluster: Cluster;
  let work: string;
  let taskNs: string;
  let admin: KubeClient;
  let saKubeconfig: string;
  let identities: Identity[];
  let controller: ChildProcess | undefined;

  before(async () => {
    cluster = await ensureCluster();
    work = await mkdtemp(path.join(tmpdir(), 'episodic-install-'));
    admin = await testClient(cluster);
    await kubectl(['apply', '--server-side', '--force-conflicts', '-f', path.join(CHART_DIR, 'crds')]);
    await kubectl([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/agenttasks.episodic.dev',
      'crd/agentepisodes.episodic.dev',
    ]);
    await cleanUp();
    taskNs = `episodic-install-${rand()}`;
    await ensureNamespace(taskNs);
  });

  after(async () => {
    if (controller && controller.exitCode === null) controller.kill('SIGKILL');
    await cleanUp().catch(() => undefined);
    admin?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('`helm install` into episodic-system creates every object', async () => {
    const out = await helm(['install', RELEASE, CHART_DIR, '--namespace', NAMESPACE, '--create-namespace']);
    assert.match(out, /STATUS: deployed/);
    assert.match(out, /kubectl -n default get at -w/, 'NOTES are shown');
    for (const [kind, name, ns] of INSTALLED) assert.ok(await exists(kind, name, ns), `${kind}/${name} missing`);
    const sa = JSON.parse(await kubectl(['get', 'serviceaccount', 'episodic', '-n', NAMESPACE, '-o', 'json']));
    assert.equal(sa.metadata.labels['app.kubernetes.io/managed-by'], 'Helm');
    saKubeconfig = await tokenKubeconfig(cluster, work, 'episodic', NAMESPACE);
    // (`kubectl --kubeconfig X` after the helper's own --kubeconfig: the last one wins.)
    const whoami = JSON.parse(await kubectl(['--kubeconfig', saKubeconfig, 'auth', 'whoami', '-o', 'json']));
    assert.equal(whoami.status.userInfo.username, SA_USER);
    identities = [
      { label: 'token', args: ['--kubeconfig', saKubeconfig] },
      {
        label: '--as',
        args: [
          '--kubeconfig',
          kubeconfigPath,
          '--as',
          SA_USER,
          '--as-group',
          'system:serviceaccounts',
          '--as-group',
          `system:serviceaccounts:${NAMESPACE}`,
        ],
      },
    ];
  });

  it('RBAC: the ServiceAccount can do exactly what the controller needs, cluster-wide', async () => {
    await assertMatrix(identities, [
      ...controllerNeeds(taskNs),
      ...controllerNeeds('default'),
      ...controllerNeeds(undefined),
      ...controllerMustNot(taskNs),
    ]);
    // The command a user types agrees with the reviews above (it sends the same SelfSubjectAccessReview).
    const canI = (args: string[]) => kubectl(['--kubeconfig', saKubeconfig, 'auth', 'can-i', ...args]);
    assert.equal(
      (await canI(['patch', 'agenttasks.episodic.dev', '--subresource=status', '-n', taskNs])).trim(),
      'yes',
    );
    await assert.rejects(canI(['get', 'secrets', '-n', taskNs]), /\(exit 1\)/, 'exit 1 is no');
  });

  it('spec guard: the ServiceAccount may set its finalizer and status, never spec, labels or annotations', async () => {
    const name = 'guarded';
    await kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'episodic.dev/v1alpha1',
        kind: 'AgentTask',
        metadata: { name, namespace: taskNs, labels: { team: 'a' } },
        spec: { prompt: 'x', agent: { image: 'x:1', command: ['x'] }, suspend: true },
      }),
    });
    const asSa = (args: string[]) => kubectl(['--kubeconfig', saKubeconfig, '-n', taskNs, ...args]);
    const specPatch = ['patch', 'agenttask', name, '--type=merge', '-p', '{"spec":{"suspend":false}}'];
    // The policy becomes active a moment after it is created; wait for it with dry runs (admission runs).
    await waitFor(
      'the spec guard to be active',
      async () => {
        try {
          await asSa([...specPatch, '--dry-run=server']);
          return false;
        } catch (err) {
          return /may not change an AgentTask's spec/.test(String(err));
        }
      },
      30_000,
    );
    await assert.rejects(
      asSa(specPatch),
      /ValidatingAdmissionPolicy 'episodic-spec-guard'.*may not change an AgentTask's spec/s,
    );
    await assert.rejects(
      asSa(['patch', 'agenttask', name, '--type=merge', '-p', '{"metadata":{"labels":{"team":"b"}}}']),
      /may not change an AgentTask's labels/,
    );
    await assert.rejects(
      asSa(['patch', 'agenttask', name, '--type=merge', '-p', '{"metadata":{"annotations":{"x":"y"}}}']),
      /may not change an AgentTask's annotations/,
    );
    await assert.rejects(asSa(['label', 'agenttask', name, 'team=c', '--overwrite']), /labels/);
    // A server-side apply PATCH of a missing object would create it: the ServiceAccount may create only the
    // system's own tasks (spawned children, trigger items), which the policy checks by owner and label.
    const sneaky = JSON.stringify({
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTask',
      metadata: { name: 'created-by-controller', namespace: taskNs },
      spec: { prompt: 'x', agent: { command: ['x'] } },
    });
    await assert.rejects(
      kubectl(['--kubeconfig', saKubeconfig, 'apply', '--server-side', `--field-manager=${FIELD_MANAGER}`, '-f', '-'], {
        input: sneaky,
      }),
      /may only create tasks it owns/,
    );
    assert.ok(!(await exists('agenttask', 'created-by-controller', taskNs)));
    // What the controller does: server-side apply of its finalizer alone (field manager
    // episodic-controller), or a merge patch of metadata.finalizers; status through the subresource.
    const finalizerApply = JSON.stringify({
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTask',
      metadata: { name, namespace: taskNs, finalizers: ['episodic.dev/cleanup'] },
    });
    await kubectl(
      [
        '--kubeconfig',
        saKubeconfig,
        'apply',
        '--server-side',
        '--force-conflicts',
        `--field-manager=${FIELD_MANAGER}`,
        '-f',
        '-',
      ],
      { input: finalizerApply },
    );
    await asSa([
      'patch',
      'agenttask',
      name,
      '--type=merge',
      '-p',
      '{"metadata":{"finalizers":["episodic.dev/cleanup"]}}',
    ]);
    await asSa([
      'patch',
      'agenttask',
      name,
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"phase":"Suspended"}}',
    ]);
    const task = JSON.parse(await kubectl(['get', 'agenttask', name, '-n', taskNs, '-o', 'json']));
    assert.equal(task.metadata.generation, 1);
    assert.equal(task.spec.suspend, true);
    assert.deepEqual(task.metadata.labels, { team: 'a' });
    assert.deepEqual(task.metadata.finalizers, ['episodic.dev/cleanup']);
    assert.equal(task.status.phase, 'Suspended');
    // Everyone else (here: the admin, as GitOps would) is not affected by the policy.
    await kubectl(['patch', 'agenttask', name, '-n', taskNs, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    await kubectl(['delete', 'agenttask', name, '-n', taskNs]);
  });

  it('`helm upgrade --set replicaCount=2`: leader election, with a Lease Role limited to its one Lease', async () => {
    await helm(['upgrade', RELEASE, CHART_DIR, '--namespace', NAMESPACE, '--reuse-values', '--set', 'replicaCount=2']);
    const deploy = JSON.parse(await kubectl(['get', 'deployment', 'episodic', '-n', NAMESPACE, '-o', 'json']));
    assert.ok(deploy.spec.template.spec.containers[0].args.includes('--leader-elect'));
    const lease = (verb: string, ns: string, expect: boolean, name?: string): Check => ({
      verb,
      resource: 'leases.coordination.k8s.io',
      ns,
      expect,
      name,
    });
    await assertMatrix(identities, [
      lease('create', NAMESPACE, true),
      lease('get', NAMESPACE, true, 'episodic-controller'),
      lease('update', NAMESPACE, true, 'episodic-controller'),
      lease('get', NAMESPACE, false, 'kube-scheduler'),
      lease('update', NAMESPACE, false, 'kube-scheduler'),
      lease('list', NAMESPACE, false),
      lease('delete', NAMESPACE, false, 'episodic-controller'),
      lease('create', 'kube-system', false),
      lease('update', 'kube-system', false, 'episodic-controller'),
    ]);
  });

  describe('the controller, authenticated as the chart ServiceAccount, with the Deployment args', () => {
    const name = 'e2e';
    let stderr = '';
    let applied: any;
    let finished: any;
    let metricsUrl: string;
    let manifest: string;

    /** Failures carry the controller's log tail: that is where a missing permission shows. */
    const withLog = async <T>(p: Promise<T>): Promise<T> => {
      try {
        return await p;
      } catch (err) {
        throw new Error(`${(err as Error).message}\n--- controller log (tail) ---\n${stderr.slice(-4000)}`, {
          cause: err,
        });
      }
    };

    it('reconciles an AgentTask end to end: pod created, kubelet result read, status written', async () => {
      const deploy = JSON.parse(await kubectl(['get', 'deployment', 'episodic', '-n', NAMESPACE, '-o', 'json']));
      const chartArgs: string[] = deploy.spec.template.spec.containers[0].args;
      const [metricsPort, healthPort] = [await freePort(), await freePort()];
      const args = [
        ...chartArgs.filter((a) => !/^--(metrics|health)-addr=/.test(a)),
        `--metrics-addr=127.0.0.1:${metricsPort}`,
        `--health-addr=127.0.0.1:${healthPort}`,
        // Other test files run their own controllers on this cluster: stay in our namespace.
        `--namespace=${taskNs}`,
        '--kubeconfig',
        saKubeconfig,
      ];
      assert.equal(args[0], 'controller');
      assert.ok(args.includes('--leader-elect'), 'the Lease is taken as the ServiceAccount too');
      metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
      controller = spawn(NODE, [cliEntry(), ...args], {
        cwd: repoRoot,
        env: { ...process.env, KUBECONFIG: '' },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      controller.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      await waitFor(
        '/readyz',
        async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined))?.status === 200,
        30_000,
      );
      assert.equal((await fetch(`http://127.0.0.1:${healthPort}/healthz`)).status, 200);

      // Applied the way Flux applies it (server-side, its own field manager).
      manifest = JSON.stringify({
        apiVersion: 'episodic.dev/v1alpha1',
        kind: 'AgentTask',
        metadata: { name, namespace: taskNs, labels: { 'app.kubernetes.io/managed-by': 'flux' } },
        spec: {
          prompt: 'Work on {{task}}, episode {{episode}}.',
          agent: {
            image: 'episodic/agent-claude-code:0.1.0',
            command: [NODE, FAKE_CLAUDE, '-p', '--output-format', 'stream-json', '--verbose'],
            output: 'claude',
            env: [{ name: 'FAKE_AGENT_MODE', value: 'success' }],
          },
          limits: { maxEpisodes: 3, episodeTimeoutSeconds: 600 },
        },
      });
      applied = JSON.parse(
        await kubectl(['apply', '--server-side', `--field-manager=${GITOPS_MANAGER}`, '-f', '-', '-o', 'json'], {
          input: manifest,
        }),
      );
      assert.equal(applied.metadata.generation, 1);

      const podName = `${name}-ep-1`;
      const pod = await withLog(
        waitFor(
          `pod ${podName}`,
          async () => {
            const out = await kubectl(['get', 'pod', podName, '-n', taskNs, '--ignore-not-found', '-o', 'json']);
            return out.trim() ? JSON.parse(out) : undefined;
          },
          30_000,
        ),
      );
      assert.equal(pod.metadata.ownerReferences[0].uid, applied.metadata.uid);
      const running = await withLog(
        waitFor(
          'status.phase Running',
          async () => {
            const t = JSON.parse(await kubectl(['get', 'agenttask', name, '-n', taskNs, '-o', 'json']));
            if (t.status?.phase === 'Running' && t.status.currentEpisode?.number === 1) return t;
            throw new Error(`status: ${JSON.stringify(t.status)}`);
          },
          30_000,
        ),
      );
      assert.equal(running.metadata.generation, 1);
      // The finalizer is added in the background (bookkeeping lane), with a resourceVersion precondition.
      await withLog(
        waitFor(
          'the episodic.dev/cleanup finalizer',
          async () => {
            const t = JSON.parse(await kubectl(['get', 'agenttask', name, '-n', taskNs, '-o', 'json']));
            return (t.metadata.finalizers ?? []).includes('episodic.dev/cleanup');
          },
          15_000,
        ),
      );

      // The kubelet's part: run the real runner with the pod's env, report the termination message.
      const outcome = await new FakeKubelet(admin).runEpisode(pod);
      assert.equal(outcome.exitCode, 0, outcome.message);
      finished = await withLog(
        waitFor(
          'status.phase Succeeded',
          async () => {
            const t = JSON.parse(
              await kubectl(['get', 'agenttask', name, '-n', taskNs, '-o', 'json', '--show-managed-fields']),
            );
            return t.status?.phase === 'Succeeded' ? t : undefined;
          },
          30_000,
        ),
      );
      assert.equal(finished.status.episodes, 1);
      assert.equal(finished.status.lastEpisode.outcome, 'succeeded');
      assert.ok(finished.status.costUSD > 0);
      // The episode's record, written as the ServiceAccount (create is all it needs for that).
      const records = await withLog(
        waitFor(
          'the AgentEpisode',
          async () => {
            const list = JSON.parse(
              await kubectl(['get', 'ae', '-n', taskNs, '-l', `episodic.dev/task=${name}`, '-o', 'json']),
            );
            return list.items.length > 0 ? list.items : undefined;
          },
          15_000,
        ),
      );
      assert.deepEqual(
        records.map((r: any) => [r.metadata.name, r.record.number, r.record.outcome]),
        [[`${name}-ep-1`, 1, 'succeeded']],
      );

      const events = JSON.parse(
        await kubectl(['get', 'events', '-n', taskNs, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']),
      );
      assert.ok(
        events.items.some((e: any) => e.source?.component === FIELD_MANAGER),
        'events recorded as the ServiceAccount',
      );
      const metrics = await (await fetch(metricsUrl)).text();
      assert.match(metrics, new RegExp(`episodic_episodes_total\\{namespace="${taskNs}",outcome="succeeded"\\} 1`));
      const lease = JSON.parse(await kubectl(['get', 'lease', 'episodic-controller', '-n', NAMESPACE, '-o', 'json']));
      assert.ok(lease.spec.holderIdentity, 'the ServiceAccount holds the Lease');
    });

    it('never changes what GitOps owns: generation, spec, labels; status and its finalizer only', async (t) => {
      assert.ok(finished, 'needs the end-to-end run');
      for (const m of finished.metadata.managedFields as any[]) {
        t.diagnostic(
          `managedFields: ${m.manager} ${m.operation}${m.subresource ? ` (${m.subresource})` : ''} ${JSON.stringify(m.fieldsV1).slice(0, 160)}`,
        );
      }
      assert.equal(finished.metadata.generation, applied.metadata.generation);
      assert.deepEqual(finished.spec, applied.spec);
      assert.deepEqual(finished.metadata.labels, applied.metadata.labels);
      const entries = (finished.metadata.managedFields as any[]).filter((m) => m.manager === FIELD_MANAGER);
      assert.ok(
        entries.length > 0,
        `no managedFields entry of ${FIELD_MANAGER}: ${JSON.stringify(finished.metadata.managedFields)}`,
      );
      for (const e of entries) {
        const top = Object.keys(e.fieldsV1);
        if (e.subresource === 'status') {
          assert.equal(e.operation, 'Update', JSON.stringify(e));
          assert.deepEqual(top, ['f:status'], JSON.stringify(e));
        } else {
          // The finalizer write (server-side apply of the finalizer alone, or a metadata merge patch) is
          // on the main resource: this manager owns metadata.finalizers there and nothing else.
          assert.ok(['Apply', 'Update'].includes(e.operation), JSON.stringify(e));
          assert.equal(e.subresource, undefined, JSON.stringify(e));
          assert.deepEqual(top, ['f:metadata'], JSON.stringify(e));
          assert.deepEqual(Object.keys(e.fieldsV1['f:metadata']), ['f:finalizers'], JSON.stringify(e));
        }
      }
      assert.deepEqual(
        entries.map((e) => e.subresource ?? '(main)').sort(),
        ['(main)', 'status'],
        'one status entry, one finalizer entry',
      );
      const gitops = (finished.metadata.managedFields as any[]).find((m) => m.manager === GITOPS_MANAGER);
      assert.equal(gitops.operation, 'Apply');
      assert.ok(gitops.fieldsV1['f:spec'], 'GitOps still owns the spec');
      assert.equal(gitops.fieldsV1['f:status'], undefined);

      // A GitOps re-sync of the same manifest: no conflict (no --force-conflicts), nothing to change.
      const resynced = JSON.parse(
        await kubectl(['apply', '--server-side', `--field-manager=${GITOPS_MANAGER}`, '-f', '-', '-o', 'json'], {
          input: manifest,
        }),
      );
      assert.equal(resynced.metadata.generation, applied.metadata.generation);
      assert.equal(resynced.status.phase, 'Succeeded');
      // A client-side `kubectl apply` (Argo CD's default) of the same manifest changes nothing either.
      const clientSide = await kubectl(['apply', '-f', '-'], { input: manifest });
      assert.match(clientSide, /configured|unchanged/);
      const after = JSON.parse(await kubectl(['get', 'agenttask', name, '-n', taskNs, '-o', 'json']));
      assert.equal(after.metadata.generation, applied.metadata.generation);
    });

    it('cleans up on delete (finalizer), never hits RBAC denials, and stops cleanly', async () => {
      await kubectl(['delete', 'agenttask', name, '-n', taskNs, '--wait=false']);
      await waitFor('the task to be gone', async () => !(await exists('agenttask', name, taskNs)), 30_000);
      const pods = await kubectl(['get', 'pods', '-n', taskNs, '-l', `episodic.dev/task=${name}`, '-o', 'name']);
      assert.equal(pods.trim(), '', 'episode pods deleted by the controller (no garbage collector here)');
      const records = await kubectl(['get', 'ae', '-n', taskNs, '-l', `episodic.dev/task=${name}`, '-o', 'name']);
      assert.equal(records.trim(), '', 'episode records deleted by the controller too');
      assert.ok(controller);
      const exited = new Promise<number | null>((resolve) => controller!.once('exit', (code) => resolve(code)));
      controller.kill('SIGTERM');
      assert.equal(await exited, 0, stderr.slice(-2000));
      assert.doesNotMatch(stderr, /forbidden|\b403\b/i, 'the ServiceAccount lacked a permission');
      assert.match(stderr, /caches synced; reconciling/);
    });
  });

  it('`helm uninstall` removes everything but the CRD (and the AgentTasks)', async () => {
    const keep = `keep-${rand()}`;
    await kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'episodic.dev/v1alpha1',
        kind: 'AgentTask',
        metadata: { name: keep, namespace: taskNs },
        spec: { prompt: 'x', agent: { command: ['x'] } },
      }),
    });
    await helm(['uninstall', RELEASE, '--namespace', NAMESPACE]);
    for (const [kind, name, ns] of INSTALLED) {
      await waitFor(`${kind}/${name} to be deleted`, async () => !(await exists(kind, name, ns)), 30_000);
    }
    assert.ok(await exists('crd', 'agenttasks.episodic.dev'), 'helm never deletes CRDs from crds/');
    assert.ok(await exists('agenttask', keep, taskNs), 'so AgentTasks survive an uninstall');
    await kubectl(['delete', 'agenttask', keep, '-n', taskNs]);
  });

  it('watchNamespace: Role and RoleBinding in that namespace, nothing cluster-wide', async () => {
    const watched = `episodic-watched-${rand()}`;
    await ensureNamespace(watched);
    await helm([
      'install',
      SCOPED_RELEASE,
      CHART_DIR,
      '--namespace',
      SCOPED_NAMESPACE,
      '--create-namespace',
      '--set',
      `watchNamespace=${watched}`,
    ]);
    try {
      assert.ok(await exists('role', SCOPED_RELEASE, watched));
      assert.ok(await exists('rolebinding', SCOPED_RELEASE, watched));
      const selector = `app.kubernetes.io/instance=${SCOPED_RELEASE}`;
      assert.equal((await kubectl(['get', 'clusterrole,clusterrolebinding', '-l', selector, '-o', 'name'])).trim(), '');
      const deploy = JSON.parse(
        await kubectl(['get', 'deployment', SCOPED_RELEASE, '-n', SCOPED_NAMESPACE, '-o', 'json']),
      );
      assert.ok(deploy.spec.template.spec.containers[0].args.includes(`--namespace=${watched}`));
      const scopedKubeconfig = await tokenKubeconfig(cluster, work, SCOPED_RELEASE, SCOPED_NAMESPACE);
      const ids: Identity[] = [{ label: 'token', args: ['--kubeconfig', scopedKubeconfig] }];
      await assertMatrix(ids, [
        ...controllerNeeds(watched),
        ...controllerMustNot(watched).filter((c) => c.ns === watched),
        ...controllerNeeds(taskNs).map((c) => ({ ...c, expect: false })),
        ...controllerNeeds(undefined).map((c) => ({ ...c, expect: false })),
      ]);
    } finally {
      await helm(['uninstall', SCOPED_RELEASE, '--namespace', SCOPED_NAMESPACE]);
    }
    assert.ok(!(await exists('role', SCOPED_RELEASE, watched)));
  });

  it('`kubectl apply --server-side -k manifests/` installs the same objects', async () => {
    const out = await kubectl(['apply', '--server-side', '-k', path.join(repoRoot, 'manifests')]);
    const crds: Array<[string, string]> = [
      ['crd', 'agenttasks.episodic.dev'],
      ['crd', 'agentepisodes.episodic.dev'],
    ];
    for (const [kind, name, ns] of [...INSTALLED, ['namespace', NAMESPACE] as [string, string], ...crds]) {
      assert.ok(await exists(kind, name, ns), `${kind}/${name} missing after apply -k:\n${out}`);
    }
    const deploy = JSON.parse(
      await kubectl(['get', 'deployment', 'episodic', '-n', NAMESPACE, '-o', 'json', '--show-managed-fields']),
    );
    assert.equal(deploy.metadata.labels['app.kubernetes.io/managed-by'], 'kustomize');
    assert.ok(deploy.metadata.managedFields.some((m: any) => m.manager === 'kubectl' && m.operation === 'Apply'));
    const vap = JSON.parse(await kubectl(['get', 'validatingadmissionpolicy', 'episodic-spec-guard', '-o', 'json']));
    assert.equal(vap.metadata.namespace, undefined);
    // Same RBAC as the chart: spot-check with the new ServiceAccount's token.
    const kc = await tokenKubeconfig(cluster, work, 'episodic', NAMESPACE);
    await assertMatrix(
      [{ label: 'kustomize token', args: ['--kubeconfig', kc] }],
      [
        ...controllerNeeds(undefined),
        { verb: 'get', resource: 'secrets', expect: false },
        { verb: 'update', resource: 'agenttasks.episodic.dev', ns: taskNs, expect: false },
      ],
    );
    // Idempotent: a second apply changes nothing.
    const versions = async () =>
      kubectl([
        'get',
        'deployment,service,serviceaccount',
        '-n',
        NAMESPACE,
        '-l',
        'app.kubernetes.io/part-of=episodic',
        '-o',
        'jsonpath={.items[*].metadata.resourceVersion}',
      ]);
    const before = await versions();
    await kubectl(['apply', '--server-side', '-k', path.join(repoRoot, 'manifests')]);
    assert.equal(await versions(), before);
  });
});
