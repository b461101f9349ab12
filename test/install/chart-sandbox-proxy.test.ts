// The chart's sandbox.proxy (issue 30 §3): off by default; on, the controller serves the CONNECT proxy of
// allowHosts on its port (--sandbox-proxy-listen, a named container port), a Service routes to it, a Secret holds
// the credentials' key (handed over as EPISODIC_SANDBOX_PROXY_KEY), and the episode defaults name the proxy's
// Service and pods for the pods' HTTPS_PROXY and their NetworkPolicy. Rendered by the real helm.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { sandboxProxySettings } from '../../controller/cli/controller.ts';
import { EpisodeDefaultsSchema } from '../../controller/kube/episode-defaults.ts';
import { NAMESPACE, controllerContainer, find, mustFind, render } from './support.ts';

describe('helm chart: sandbox.proxy', () => {
  it('off by default: no flag, Service, Secret or proxy defaults', async () => {
    const objects = await render();
    assert.equal(find(objects, 'Service', 'episodic-sandbox-proxy'), undefined);
    assert.equal(find(objects, 'Secret', 'episodic-sandbox-proxy'), undefined);
    assert.ok(!(controllerContainer(objects).args as string[]).some((a) => a.startsWith('--sandbox-proxy-listen')));
  });

  it('on: the port, the Service, the key Secret, and defaults the controller accepts', async () => {
    const objects = await render({ 'sandbox.proxy.enabled': true, 'sandbox.proxy.port': 3200 });
    const c = controllerContainer(objects);
    assert.ok(c.args.includes('--sandbox-proxy-listen=0.0.0.0:3200'));
    assert.deepEqual(
      c.ports.find((p: { name: string }) => p.name === 'sandbox-proxy'),
      { name: 'sandbox-proxy', containerPort: 3200, protocol: 'TCP' },
    );
    const service = mustFind(objects, 'Service', 'episodic-sandbox-proxy');
    assert.deepEqual(service.spec.ports, [
      { name: 'sandbox-proxy', port: 3200, targetPort: 'sandbox-proxy', protocol: 'TCP' },
    ]);
    assert.deepEqual(service.spec.selector, mustFind(objects, 'Deployment').spec.selector.matchLabels);
    const secret = mustFind(objects, 'Secret', 'episodic-sandbox-proxy');
    const key = Buffer.from(secret.data.key, 'base64').toString();
    assert.ok(key.length >= 32, 'a key the controller accepts');
    assert.deepEqual(sandboxProxySettings(':3200', { EPISODIC_SANDBOX_PROXY_KEY: key })?.key, Buffer.from(key));
    const env = c.env.find((e: { name: string }) => e.name === 'EPISODIC_SANDBOX_PROXY_KEY');
    assert.deepEqual(env.valueFrom, { secretKeyRef: { name: 'episodic-sandbox-proxy', key: 'key' } });
    const cm = mustFind(objects, 'ConfigMap', 'episodic-episode-defaults');
    const defaults = EpisodeDefaultsSchema.parse(parseYaml(cm.data['episode-defaults.yaml']));
    assert.deepEqual(defaults.sandbox?.proxy, {
      host: `episodic-sandbox-proxy.${NAMESPACE}.svc`,
      port: 3200,
      namespace: NAMESPACE,
      podLabels: service.spec.selector,
    });
  });

  it('the controller refuses --sandbox-proxy-listen without a key of 32+ characters, naming the variable', () => {
    assert.throws(() => sandboxProxySettings(':3128', {}), /EPISODIC_SANDBOX_PROXY_KEY/);
    assert.throws(() => sandboxProxySettings(':3128', { EPISODIC_SANDBOX_PROXY_KEY: 'short' }), /32\+ characters/);
    assert.equal(sandboxProxySettings(undefined, {}), undefined);
  });
});
