// The chart's model gateway (gateway.enabled): the controller listens on every interface only then, a Service
// selects the controller's pods on the gateway port, and a Role in each secret namespace lets the controller
// get AgentCredentials and Secrets (nothing more); on the real apiserver the authorizer agrees.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { ensureCluster, kubectl, kubectlPath, kubeconfigPath } from '../support/cluster.ts';
import { createNamespace } from '../support/kubelet.ts';
import {
  CHART_DIR,
  NAMESPACE,
  controllerContainer,
  controllerFlags,
  find,
  helmCmd,
  mustFind,
  render,
  skipCluster,
  valueArgs,
} from './support.ts';
import type { K8sObject } from './support.ts';

const execFileAsync = promisify(execFile);
const ON = { 'gateway.enabled': true };
const roles = (objects: K8sObject[]) =>
  objects.filter((o) => o.kind === 'Role' && o.metadata.name === 'episodic-gateway');

describe('helm chart: gateway.enabled', () => {
  it('passes `helm lint --strict`', async () => {
    const out = await helmCmd([
      'lint',
      '--strict',
      CHART_DIR,
      ...valueArgs({ ...ON, 'gateway.secretNames': ['keys'] }),
    ]);
    assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it('off by default: no Service, no Role, no gateway flag, no Secret access', async () => {
    const objects = await render({});
    assert.equal(find(objects, 'Service', 'episodic-gateway'), undefined);
    assert.deepEqual(roles(objects), []);
    assert.ok(!controllerContainer(objects).args.some((a: string) => a.startsWith('--gateway')));
  });

  it('renders the Service on the controller pods, the flags the CLI knows, and the port', async () => {
    const objects = await render(ON);
    const service = mustFind(objects, 'Service', 'episodic-gateway');
    const deployment = mustFind(objects, 'Deployment');
    assert.deepEqual(service.spec.ports, [{ name: 'gateway', port: 8070, targetPort: 'gateway', protocol: 'TCP' }]);
    for (const [k, v] of Object.entries(service.spec.selector))
      assert.equal(deployment.spec.template.metadata.labels[k], v, `selector ${k}`);
    const container = controllerContainer(objects);
    assert.ok(container.args.includes('--gateway-addr=0.0.0.0:8070'), container.args.join(' '));
    assert.ok(
      container.args.includes(`--gateway-url=http://episodic-gateway.${NAMESPACE}.svc:8070`),
      container.args.join(' '),
    );
    assert.ok(container.ports.some((p: any) => p.name === 'gateway' && p.containerPort === 8070));
    const flags = await controllerFlags();
    assert.ok(flags.has('--gateway-addr') && flags.has('--gateway-url'), 'the CLI has both flags');
  });

  it('grants get (only) on AgentCredentials and Secrets in the secret namespaces, bound to the ServiceAccount', async () => {
    const release = roles(await render(ON));
    assert.deepEqual(
      release.map((r) => r.metadata.namespace),
      [NAMESPACE],
    );
    assert.deepEqual(release[0].rules, [
      { apiGroups: ['episodic.dev'], resources: ['agentcredentials'], verbs: ['get'] },
      { apiGroups: ['episodic.dev'], resources: ['agentcredentials/status'], verbs: ['patch'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
    ]);
    const scoped = roles(await render({ ...ON, watchNamespace: 'team-a' }));
    assert.deepEqual(
      scoped.map((r) => r.metadata.namespace),
      ['team-a'],
    );
    const listed = await render({ ...ON, 'gateway.secretNamespaces': ['a', 'b'], 'gateway.secretNames': ['keys'] });
    assert.deepEqual(
      roles(listed).map((r) => [r.metadata.namespace, r.rules[2].resourceNames]),
      [
        ['a', ['keys']],
        ['b', ['keys']],
      ],
    );
    const bindings = listed.filter((o) => o.kind === 'RoleBinding' && o.metadata.name === 'episodic-gateway');
    assert.deepEqual(
      bindings.map((b) => [b.metadata.namespace, b.subjects]),
      ['a', 'b'].map((ns) => [ns, [{ kind: 'ServiceAccount', name: 'episodic', namespace: NAMESPACE }]]),
    );
  });

  it('lets the controller list and watch AgentCredentials where it watches tasks (the namespace defaults)', async () => {
    const rule = { apiGroups: ['episodic.dev'], resources: ['agentcredentials'], verbs: ['list', 'watch'] };
    const main = (objects: K8sObject[], kind: string) =>
      objects.find((o) => o.kind === kind && o.metadata.name === 'episodic') as any;
    assert.deepEqual(
      main(await render(ON), 'ClusterRole').rules.filter((r: any) => r.resources.includes('agentcredentials')),
      [rule],
    );
    const scoped = main(await render({ ...ON, watchNamespace: 'team-a' }), 'Role');
    assert.equal(scoped.metadata.namespace, 'team-a');
    assert.ok(scoped.rules.some((r: any) => JSON.stringify(r) === JSON.stringify(rule)));
    // Gateway off too: the controller sees a namespace default, and fails its tasks saying it needs the gateway.
    const off = main(await render({}), 'ClusterRole');
    assert.deepEqual(
      off.rules.filter((r: any) => r.resources.includes('agentcredentials')),
      [rule],
    );
  });

  it('refuses more than one replica, saying why', async () => {
    await assert.rejects(render({ ...ON, replicaCount: 2 }), /gateway\.enabled: .*replicaCount: 1/);
  });
});

describe('helm chart: gateway RBAC on the real apiserver', { skip: skipCluster }, () => {
  it('the ServiceAccount may get the named Secret and AgentCredentials there, and nothing else', async () => {
    await ensureCluster();
    const ns = await createNamespace('gw-rbac');
    const other = `${ns}-other`; // the authorizer answers for a namespace that does not exist as well
    const objects = (
      await render({ ...ON, 'gateway.secretNamespaces': [ns], 'gateway.secretNames': ['agent-keys'] })
    ).filter((o) => (o.kind === 'Role' || o.kind === 'RoleBinding') && o.metadata.name === 'episodic-gateway');
    assert.equal(objects.length, 2);
    await kubectl(['apply', '-f', '-'], { input: objects.map((o) => JSON.stringify(o)).join('\n') });
    const sa = `system:serviceaccount:${NAMESPACE}:episodic`;
    const can = async (verb: string, what: string, where: string, subresource?: string) => {
      const sub = subresource ? [`--subresource=${subresource}`] : [];
      const args = ['--kubeconfig', kubeconfigPath, 'auth', 'can-i', verb, what, ...sub, '-n', where, `--as=${sa}`];
      const out = await execFileAsync(kubectlPath, args).then(
        (r) => r.stdout,
        (e: { stdout?: string }) => e.stdout ?? '',
      );
      return out.trim() === 'yes';
    };
    const answers = await Promise.all([
      can('get', 'secrets/agent-keys', ns),
      can('get', 'agentcredentials.episodic.dev/claude', ns),
      can('get', 'secrets/other-keys', ns),
      can('list', 'secrets', ns),
      can('watch', 'secrets', ns),
      can('get', 'secrets/agent-keys', other),
      can('patch', 'agentcredentials.episodic.dev/claude', ns, 'status'),
      can('patch', 'agentcredentials.episodic.dev/claude', ns),
    ]);
    // get the named Secret and the AgentCredentials, patch its status (not its spec); not another Secret, no
    // list or watch, nowhere else.
    assert.deepEqual(answers, [true, true, false, false, false, false, true, false]);
  });
});
