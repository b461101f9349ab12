// A log with one 100 MB line (an agent's runaway `cat` of a bundle, no newline until the end): `episodic
// logs`, `logs -f` and the console's log endpoint answer with the line cut and its size, in bounded memory.
// Memory is the peak RSS of the real process, against the same process streaming the same log raw (no
// rendering): holding the line whole, as a JS string, would add more than its 100 MB.
import assert from 'node:assert/strict';
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import { LOG_LINE_MAX_BYTES } from '../../controller/api/bounds.ts';
import { REPO, runCli, specDir, startCli } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const MIB = 1024 * 1024;
/** Room above the raw stream's peak: the renderer holds at most LOG_LINE_MAX_BYTES of a line, a few times. */
const RENDER_RSS_ROOM_KIB = 48 * 1024;
const HANG_GUARD_MS = 120_000;
const NODE_OPTIONS = `--import=${pathToFileURL(join(REPO, 'test/support/report-max-rss.mjs')).href}`;

let dir: string;
/** The long line: an assistant stream-json event, valid JSON, never to be parsed whole. */
const PREFIX = '{"type":"assistant","message":{"content":[{"type":"text","text":"';
const SUFFIX = '"}]}}';
const LINE_BYTES = PREFIX.length + 100 * MIB + SUFFIX.length;
const MARKER = `… ${LINE_BYTES.toLocaleString('en-US')} bytes, cut`;

before(async () => {
  dir = specDir([
    {
      name: 'alpha',
      script: { steps: [{ mode: 'continue', text: 'first step done' }, { mode: 'success' }] },
    },
  ]);
  const run = await runCli(['run', dir]);
  assert.equal(run.code, 0, run.stderr);
  // Episode 1's log as the run wrote it, with the long line and a line after it in the middle.
  const file = join(dir, '.episodic/logs/default/alpha/episode-1.log');
  const [head, ...rest] = readFileSync(file, 'utf8').split(/(?<=\n)/);
  const fd = openSync(file, 'w');
  writeSync(fd, head ?? '');
  writeSync(fd, PREFIX);
  const mib = Buffer.alloc(MIB, 'x');
  for (let i = 0; i < 100; i++) writeSync(fd, mib);
  writeSync(fd, `${SUFFIX}\nthe line after it\n${rest.join('')}`);
  closeSync(fd);
});

// 100 MB per run is too much to leave in the temp directory.
after(() => rmSync(dir, { recursive: true, force: true }));

function maxRssKiB(stderr: string): number {
  const kib = Number(/^maxRSS (\d+) KiB$/m.exec(stderr)?.[1]);
  assert.ok(kib > 0, `no maxRSS in: ${stderr.slice(-500)}`);
  return kib;
}

/** The cut line: its head, as text (not parsed), then the marker with the line's size. */
function assertCut(out: string): void {
  const cut = out.split('\n').find((l) => l.endsWith(MARKER));
  assert.ok(cut, `no line ends with "${MARKER}":\n${out.slice(0, 2000)}`);
  assert.ok(cut.startsWith(PREFIX), cut.slice(0, 200));
  assert.ok(cut.length < 4100, `${cut.length} characters`);
  assert.match(out, /^the line after it$/m);
}

/** `episodic logs --raw` of the same log into /dev/null: the peak RSS of reading it with no rendering. */
let rawBaseline: Promise<number> | undefined;
function rawRssKiB(): Promise<number> {
  rawBaseline ??= new Promise((resolve, reject) => {
    const cli = startCli(['logs', 'alpha', dir, '--episode', '1', '--raw'], { env: { NODE_OPTIONS } });
    cli.child.stdout?.removeAllListeners('data').resume();
    let stderr = '';
    cli.child.stderr?.removeAllListeners('data').on('data', (d: Buffer) => (stderr += d));
    void cli.exited.then((code) => (code === 0 ? resolve(maxRssKiB(stderr)) : reject(new Error(stderr))));
  });
  return rawBaseline;
}

test('episodic logs NAME DIR: a 100 MB line is shown cut with its size, in bounded memory', async (t) => {
  const logs = await runCli(['logs', 'alpha', dir, '--episode', '1'], {
    env: { NODE_OPTIONS },
    timeoutMs: HANG_GUARD_MS,
  });
  assert.equal(logs.code, 0, logs.stderr);
  assertCut(logs.stdout);
  assert.match(logs.stdout, /^first step done$/m, 'the lines around it still render');
  assert.ok(logs.stdout.length < 16 * 1024, `${logs.stdout.length} bytes printed`);
  const [rendered, raw] = [maxRssKiB(logs.stderr), await rawRssKiB()];
  t.diagnostic(`peak RSS: rendered ${rendered} KiB, raw ${raw} KiB; line bound ${LOG_LINE_MAX_BYTES} bytes`);
  assert.ok(rendered < raw + RENDER_RSS_ROOM_KIB, `rendered ${rendered} KiB, raw ${raw} KiB`);
});

test('episodic logs -f: the long line cut, then the next episode, in bounded memory', async (t) => {
  const followed = await runCli(['logs', 'alpha', dir, '--episode', '1', '-f'], {
    env: { NODE_OPTIONS },
    timeoutMs: HANG_GUARD_MS,
  });
  assert.equal(followed.code, 0, followed.stderr);
  assertCut(followed.stdout);
  assert.match(followed.stdout, /cut\n[\s\S]*^=== default\/alpha episode 2: succeeded/m);
  const [rendered, raw] = [maxRssKiB(followed.stderr), await rawRssKiB()];
  t.diagnostic(`peak RSS: followed ${rendered} KiB, raw ${raw} KiB`);
  assert.ok(rendered < raw + RENDER_RSS_ROOM_KIB, `followed ${rendered} KiB, raw ${raw} KiB`);
});

/** `episodic console DIR` asked for episode 1's log (`?raw`: the bytes, counted): the body, and its peak RSS. */
async function consoleLog(query: string): Promise<{ body: string; bytes: number; maxRss: number }> {
  const cli = startCli(['console', dir, '--listen', '127.0.0.1:0'], { env: { NODE_OPTIONS } });
  try {
    const url = await waitFor(
      'the console to serve',
      () => /serving .* at (http:\/\/\S+?)\/?$/m.exec(cli.output())?.[1],
    );
    const got = await new Promise<{ body: string; bytes: number }>((resolve, reject) => {
      request(`${url}/api/tasks/default/alpha/episodes/1/log${query}`, (res) => {
        assert.equal(res.statusCode, 200);
        let body = '';
        let bytes = 0;
        res.on('data', (d: Buffer) => {
          bytes += d.length;
          if (body.length < 64 * 1024) body += d.toString();
        });
        res.on('end', () => resolve({ body, bytes }));
      })
        .on('error', reject)
        .end();
    });
    cli.child.kill('SIGINT');
    await cli.exited;
    return { ...got, maxRss: maxRssKiB(cli.output()) };
  } finally {
    cli.child.kill('SIGKILL');
  }
}

test("the console's log endpoint: the long line cut with its size, in bounded memory", {
  timeout: HANG_GUARD_MS,
}, async (t) => {
  const [rendered, raw] = await Promise.all([consoleLog(''), consoleLog('?raw')]);
  assert.ok(raw.bytes > LINE_BYTES, `raw served ${raw.bytes} bytes`);
  assertCut(rendered.body);
  assert.ok(rendered.bytes < 16 * 1024, `${rendered.bytes} bytes served`);
  t.diagnostic(`console peak RSS: rendered ${rendered.maxRss} KiB, raw ${raw.maxRss} KiB`);
  assert.ok(
    rendered.maxRss < raw.maxRss + RENDER_RSS_ROOM_KIB,
    `rendered ${rendered.maxRss} KiB, raw ${raw.maxRss} KiB`,
  );
});
