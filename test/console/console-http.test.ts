// The console's HTTP surface without a browser: no secret is ever served, beyond localhost a token is
// required (and refused in one line without one), a foreign Host and cross-site actions are refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, specDir, startCli } from '../support/local.ts';
import { startConsoleCli } from '../support/browser.ts';
import { waitFor } from '../support/wait.ts';

const SECRET = 'sk-live-console-secret-4711';

function get(url: string, headers: Record<string, string> = {}, method = 'GET', body?: string) {
  return new Promise<{ status: number; body: string; headers: Record<string, unknown> }>((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('console http: no secret env value or token in any page, asset or API answer; a Host other than localhost and cross-site actions are refused', async () => {
  const dir = specDir([
    {
      name: 'holder',
      spec: {
        agent: {
          command: [process.execPath, 'test/agents/fake-claude.mjs'],
          output: 'claude',
          env: [{ name: 'API_KEY', value: SECRET }],
        },
        limits: { maxEpisodes: 1, episodeTimeoutSeconds: 30 },
      },
      script: { default: { mode: 'continue' } },
    },
  ]);
  await runCli(['run', dir]);
  const server = await startConsoleCli(dir);
  try {
    const paths = [
      '/',
      '/assets/app.js',
      '/assets/uplot.js',
      '/assets/app.css',
      '/api/tasks',
      '/api/tasks?first=100',
      '/api/budgets',
      '/api/tasks/default/holder',
      '/api/tasks/default/holder/episodes/1/log',
    ];
    for (const path of paths) {
      const res = await get(`${server.url}${path}`);
      assert.equal(res.status, 200, path);
      assert.ok(!res.body.includes(SECRET), `${path} serves the secret`);
      assert.match(String(res.headers['content-security-policy']), /script-src 'self'/);
    }
    assert.match((await get(`${server.url}/api/tasks/default/holder`)).body, /"phase":"NeedsReview"/);
    assert.equal((await get(`${server.url}/api/tasks/default/..%2f..%2fetc/episodes/1/log`)).status, 404);
    assert.equal((await get(`${server.url}/api/tasks`, { Host: 'attacker.example:80' })).status, 421);
    const resume = `${server.url}/api/tasks/default/holder/resume`;
    assert.equal((await get(resume, {}, 'POST', '{}')).status, 403, 'no custom header');
    const crossSite = { 'X-Episodic-Console': '1', Origin: 'http://attacker.example' };
    assert.equal((await get(resume, crossSite, 'POST', '{}')).status, 403, 'foreign origin');
    const ok = await get(resume, { 'X-Episodic-Console': '1', Origin: server.url }, 'POST', '{}');
    assert.equal(ok.status, 200, ok.body);
    const waits = /takes effect when `episodic run` next runs/;
    assert.match(JSON.parse(ok.body).note, waits, 'no run holds the state dir: the answer says it waits');
    const suspend = `${server.url}/api/tasks/default/holder/suspend`;
    assert.equal((await get(suspend, {}, 'POST', '{}')).status, 403, 'suspend: no custom header');
    assert.equal((await get(suspend, crossSite, 'POST', '{}')).status, 403, 'suspend: foreign origin');
    const sameSite = { 'X-Episodic-Console': '1', 'Sec-Fetch-Site': 'same-site' };
    assert.equal((await get(suspend, sameSite, 'POST', '{}')).status, 403, 'suspend: another site of ours');
    assert.ok(!existsSync(join(dir, '.episodic/suspend/default/holder.json')), 'no refused request set a hold');
    const held = await get(suspend, { 'X-Episodic-Console': '1', Origin: server.url }, 'POST', '{}');
    assert.equal(held.status, 200, held.body);
    assert.match(JSON.parse(held.body).note, waits);
    // A live controller holds the lock (here: this test's own pid): the request is acted on now, no note.
    writeFileSync(join(dir, '.episodic/lock'), `${process.pid}\n`);
    const live = await get(suspend, { 'X-Episodic-Console': '1', Origin: server.url }, 'POST', '{}');
    rmSync(join(dir, '.episodic/lock'));
    assert.equal(live.status, 200, live.body);
    assert.equal(JSON.parse(live.body).note, undefined);
    assert.equal(JSON.parse(readFileSync(join(dir, '.episodic/suspend/default/holder.json'), 'utf8')).suspended, true);
    const unknown = `${server.url}/api/tasks/default/nobody/unsuspend`;
    assert.equal((await get(unknown, { 'X-Episodic-Console': '1' }, 'POST', '{}')).status, 404);
  } finally {
    server.child.kill('SIGINT');
    await server.exited;
  }
});

test('console http: beyond localhost it refuses to start without a token, in one line; with one, every request needs it', async () => {
  const dir = specDir([{ name: 'one', script: { default: { mode: 'success' } } }]);
  const refused = await runCli(['console', dir, '--listen', '0.0.0.0:0'], { env: { EPISODIC_CONSOLE_TOKEN: '' } });
  assert.equal(refused.code, 2);
  assert.equal(refused.stderr.trim().split('\n').length, 1);
  assert.match(refused.stderr, /beyond localhost\) needs a bearer token: set EPISODIC_CONSOLE_TOKEN/);

  const token = 'console-token-0123456789';
  const cli = startCli(['console', dir, '--listen', '0.0.0.0:0'], { env: { EPISODIC_CONSOLE_TOKEN: token } });
  try {
    const port = await waitFor('serving', () => /at http:\/\/\S+:(\d+)\//.exec(cli.output())?.[1]);
    const url = `http://127.0.0.1:${port}`;
    assert.equal((await get(`${url}/api/tasks`)).status, 401);
    assert.equal((await get(`${url}/api/tasks`, { Authorization: 'Bearer wrong' })).status, 401);
    const ok = await get(`${url}/api/tasks`, { Authorization: `Bearer ${token}` });
    assert.equal(ok.status, 200);
    assert.ok(!ok.body.includes(token));
    const login = await get(`${url}/login?token=${token}`);
    assert.equal(login.status, 303);
    const cookie = String((login.headers['set-cookie'] as string[])[0]).split(';')[0] as string;
    assert.equal((await get(`${url}/api/tasks`, { Cookie: cookie })).status, 200);
    const suspend = `${url}/api/tasks/default/one/suspend`;
    const action = { 'X-Episodic-Console': '1' };
    assert.equal((await get(suspend, action, 'POST', '{}')).status, 401, 'an action needs the token too');
    assert.equal((await get(suspend, { ...action, Authorization: `Bearer ${token}` }, 'POST', '{}')).status, 200);
    assert.ok(!(await get(`${url}/assets/app.js`, { Cookie: cookie })).body.includes(token));
  } finally {
    cli.child.kill('SIGINT');
    await cli.exited;
  }
});
