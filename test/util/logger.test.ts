// Log lines pass the one redaction rule: paths (env, token, …), the message and top-level text fields.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createLogger } from '../../controller/util/logger.ts';
import { waitFor } from '../support/wait.ts';

test('a credential in a log message, an err text or a token field never reaches the file', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'episodic-log-')), 'log.jsonl');
  const logger = createLogger({ file });
  const credential = 'ghp_abcdefghijklmnopqrstuvwxyz0123';
  logger.warn({ err: `push to https://bob:pw@forge.local failed`, token: 'plain', count: 3 }, `saw ${credential}`);
  const line = await waitFor('the log line', () => JSON.parse(readFileSync(file, 'utf8').trim()));
  assert.equal(line.msg, 'saw [redacted]');
  assert.equal(line.err, 'push to https://[redacted]@forge.local failed');
  assert.equal(line.token, '[redacted]');
  assert.equal(line.count, 3);
});
