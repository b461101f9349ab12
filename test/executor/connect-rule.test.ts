// The CONNECT proxy's rule (issue 30): one for both modes. Locally the socket names the task; on a cluster the
// Proxy-Authorization credential does, made with the controller's key. Table-tested as a pure function.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { proxyAllowOf, proxyEnv } from '../../controller/executors/cluster/proxy-env.ts';
import { admitClusterConnect, parseHead, proxyCredential } from '../../controller/executors/sandbox/connect-rule.ts';

const KEY = Buffer.from('secret-key-of-the-controller-0123456789');
const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
const head = (line: string, auth?: string) =>
  [line, 'Host: x', ...(auth ? [`Proxy-Authorization: ${auth}`] : [])].join('\r\n');
const allowOf = (t: { namespace: string; name: string }) => (t.name === 'boxed' ? ['github.com:443'] : undefined);
const good = basic('ns.boxed', proxyCredential(KEY, { namespace: 'ns', name: 'boxed' }));

describe('admitClusterConnect', () => {
  const table: Array<[string, string, unknown]> = [
    ['credential and listed pair', head('CONNECT github.com:443 HTTP/1.1', good), { host: 'github.com', port: 443 }],
    [
      'credential, pair not listed',
      head('CONNECT evil.com:443 HTTP/1.1', good),
      { refused: 'evil.com:443 is not in allowHosts', status: 403 },
    ],
    ['no credential', head('CONNECT github.com:443 HTTP/1.1'), { status: 407 }],
    ['forged password', head('CONNECT github.com:443 HTTP/1.1', basic('ns.boxed', 'guess')), { status: 407 }],
    [
      "another task's name with this task's password",
      head(
        'CONNECT github.com:443 HTTP/1.1',
        basic('ns.other', proxyCredential(KEY, { namespace: 'ns', name: 'boxed' })),
      ),
      { status: 407 },
    ],
    [
      'valid credential of a task with no allowHosts',
      head(
        'CONNECT github.com:443 HTTP/1.1',
        basic('ns.plain', proxyCredential(KEY, { namespace: 'ns', name: 'plain' })),
      ),
      { refused: 'ns.plain has no allowHosts here', status: 403 },
    ],
    ['not CONNECT', head('GET http://github.com/ HTTP/1.1', good), { refused: 'not a CONNECT request', status: 403 }],
    ['not Basic', head('CONNECT github.com:443 HTTP/1.1', 'Bearer x'), { status: 407 }],
  ];
  for (const [what, h, want] of table)
    it(what, () => {
      const got = admitClusterConnect(h, KEY, allowOf);
      if ((want as { status?: number }).status === 407) assert.equal((got as { status?: number }).status, 407);
      else assert.deepEqual(got, want);
    });
  it('parseHead: header names are case-insensitive', () =>
    assert.deepEqual(parseHead('CONNECT a:1 HTTP/1.1\r\nproxy-AUTHORIZATION:  Basic eA=='), {
      line: 'CONNECT a:1 HTTP/1.1',
      authorization: 'Basic eA==',
    }));
});

describe('proxyAllowOf and proxyEnv', () => {
  const spec = (sandbox: unknown, env: unknown[] = []) =>
    AgentTaskSpecSchema.parse({ prompt: 'x', agent: { image: 'i', command: ['a'], env }, sandbox });
  const proxy = { host: 'p.episodic.svc', port: 3128, podLabels: { app: 'c' } };
  it('allowHosts and https gateways are admitted; unsandboxed, none and open are not proxied', () => {
    const env = [{ name: 'OPENAI_BASE_URL', value: 'https://api.openai.com/v1' }];
    assert.deepEqual(proxyAllowOf(spec({ allowHosts: ['github.com:443'] }, env)), [
      'github.com:443',
      'api.openai.com:443',
    ]);
    assert.equal(proxyAllowOf(spec({})), undefined);
    assert.equal(proxyAllowOf(spec(undefined)), undefined);
    assert.equal(proxyAllowOf(spec({ network: 'none' })), undefined);
    assert.equal(proxyAllowOf(spec({ enabled: false, allowHosts: ['a:1'] })), undefined);
  });
  it('the pod dials the proxy with its credential; http gateways and in-cluster names go direct', () => {
    const env = [{ name: 'ANTHROPIC_BASE_URL', value: 'http://gw.gateway.svc:8080' }];
    const vars = Object.fromEntries(
      proxyEnv({ namespace: 'ns', name: 't' }, spec({ allowHosts: ['github.com:443'] }, env), proxy, KEY).map((e) => [
        e.name,
        e.value,
      ]),
    );
    const cred = proxyCredential(KEY, { namespace: 'ns', name: 't' });
    assert.equal(vars.HTTPS_PROXY, `http://ns.t:${cred}@p.episodic.svc:3128`);
    assert.equal(vars.http_proxy, vars.HTTPS_PROXY);
    assert.equal(vars.NO_PROXY, '127.0.0.1,localhost,.svc,.cluster.local,gw.gateway.svc');
  });
  it('no proxy in the chart, no key, or nothing to admit: no variables', () => {
    const s = spec({ allowHosts: ['github.com:443'] });
    assert.deepEqual(proxyEnv({ namespace: 'ns', name: 't' }, s, undefined, KEY), []);
    assert.deepEqual(proxyEnv({ namespace: 'ns', name: 't' }, s, proxy, undefined), []);
    assert.deepEqual(proxyEnv({ namespace: 'ns', name: 't' }, spec({}), proxy, KEY), []);
  });
});
