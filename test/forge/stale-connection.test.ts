// A GET that meets a connection the server already closed (a kept-alive socket it timed out while the
// controller was busy creating tasks) is asked once more instead of failing the poll; a write is not
// repeated. Seen in bench/triggers: the idle poll after 1,000 created tasks failed with ECONNRESET.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { GiteaForge } from '../../controller/forge/gitea.ts';
import { GitHubForge } from '../../controller/forge/github.ts';
import { ForgeUnavailableError } from '../../controller/forge/types.ts';

/** Resets the connection of the first request of each method; then `[]` (a login for GET /user). */
async function resettingServer(t: { after(fn: () => void): void }) {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.method ?? '');
    if (seen.filter((m) => m === req.method).length === 1) return req.socket.destroy();
    res.setHeader('content-type', 'application/json');
    res.end(req.url?.endsWith('/user') ? '{"login": "me"}' : req.method === 'GET' ? '[]' : '{"id": 1}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => server.close());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

test('GitHubForge: a reset GET is asked once more', async (t) => {
  const { url, seen } = await resettingServer(t);
  const forge = new GitHubForge({ apiURL: url, repo: 'o/r', token: 'tok-github' });
  const listed = await forge.listItems({ kind: 'issues' });
  assert.deepEqual(listed, { kind: 'listed', entries: [] });
  assert.deepEqual(seen, ['GET', 'GET']);
});

test('GiteaForge: a reset GET is asked once more; a reset POST is not repeated', async (t) => {
  const { url, seen } = await resettingServer(t);
  const forge = new GiteaForge({ apiURL: url, repo: 'o/r', token: 'tok-gitea' });
  assert.deepEqual(await forge.listItems({ kind: 'issues' }), { kind: 'listed', entries: [] });
  // whoami and the item's comments (GETs), then the new report comment: a POST, not asked twice.
  await assert.rejects(forge.upsertReport(1, 'fix/fix-1', 'Pending'), ForgeUnavailableError);
  assert.deepEqual(seen, ['GET', 'GET', 'GET', 'GET', 'POST']);
});
