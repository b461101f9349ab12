// The hostile agent of issue 20 §4 against `episodic run` (test/support/hostile-ops.ts): names that are paths,
// namespaces or not DNS labels, a field naming another namespace, a raised limit, a workspace leading out, a
// spawn storm past maxChildren, a chain of spawns past depth 3, and an env secret and a credential-looking
// token put in keys, values, op names, field names and targets. Every escape is refused with a message, and
// neither string reaches the log (Events are log lines here), a status or an episode record.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { NODE, REPO, readStatus, runCli, specDir } from '../support/local.ts';
import * as hostile from '../support/hostile-ops.ts';

const OPS_AGENT = join(REPO, 'test/agents/ops-agent.mjs');

/** Every file under dir whose name passes `keep`, as text. */
function allText(dir: string, keep: (name: string) => boolean = () => true): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && keep(e.name))
    .map((e) => readFileSync(join(e.parentPath, e.name), 'utf8'))
    .join('\n');
}

test('local: a hostile agent stays in its namespace, its limits, maxChildren and depth; no secret is published', async () => {
  const dir = specDir([{ name: 'evil', spec: hostile.hostileSpec({ command: [NODE, OPS_AGENT], output: 'text' }) }]);
  const res = await runCli(['run', dir], { timeoutMs: 120_000 });
  const log = res.stdout + res.stderr;
  assert.equal(res.code, 0, log);
  const state = join(dir, '.episodic');
  assert.deepEqual(readdirSync(join(state, 'status')), ['default'], 'one namespace only');
  assert.deepEqual(readdirSync(join(state, 'created')), ['default']);
  const tasks = readdirSync(join(state, 'status', 'default')).map((f) => f.replace(/\.json$/, ''));
  assert.deepEqual(tasks.sort(), [...hostile.HOSTILE_TASKS].sort());
  for (const t of tasks) assert.equal(readStatus(dir, t)?.status.phase, 'Succeeded', t);

  const record = readFileSync(join(state, 'logs', 'default', 'evil', 'episodes.jsonl'), 'utf8');
  for (const words of hostile.PARSE_REJECTIONS) assert.match(record, words);
  for (const words of hostile.APPLY_REJECTIONS) assert.match(log, words);
  assert.match(log, hostile.DEPTH_REJECTION);
  assert.match(record, /"set \[redacted\]"/, 'a key that is the secret is named [redacted]');

  // The episode's own files (its output, its ops file) are the agent's; what the controller writes is checked.
  const records = allText(join(state, 'logs'), (name) => name === 'episodes.jsonl');
  const published = [log, allText(join(state, 'status')), records].join('\n');
  for (const secret of [hostile.ENV_SECRET, hostile.TOKEN, 'sk-live']) assert.ok(!published.includes(secret), secret);
});
