// The spare relay's rules (relay-choice.ts: where a task's relay comes from, when a spare is kept) and what a
// relay accepts as its task (relay-assignment.ts), table-tested; then the relay itself (relay.ts, a real Node
// process, outside bwrap): it refuses a bad assignment before listening, a second one, and ends with its stdin.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { assignmentLine, parseAssignment } from '../../controller/executors/sandbox/relay-assignment.ts';
import { relaySource, spareAction } from '../../controller/executors/sandbox/relay-choice.ts';
import type { SpareState } from '../../controller/executors/sandbox/relay-choice.ts';
import { NODE, REPO } from '../support/local.ts';

describe('relaySource and spareAction', () => {
  const source: Array<[SpareState, boolean, string]> = [
    ['none', true, 'start'],
    ['none', false, 'start'],
    ['starting', true, 'take-spare'],
    ['started', true, 'take-spare'],
    ['started', false, 'start'],
    ['starting', false, 'start'],
  ];
  for (const [spare, sameBase, want] of source)
    it(`spare ${spare}, same install ${sameBase}: ${want}`, () => assert.equal(relaySource({ spare, sameBase }), want));
  const keep: Array<[SpareState, number, string]> = [
    ['none', 0, 'keep'],
    ['none', 1, 'start'],
    ['none', 3, 'start'],
    ['starting', 2, 'keep'],
    ['started', 1, 'keep'],
    ['started', 0, 'end'],
    ['starting', 0, 'end'],
  ];
  for (const [spare, gatewayTasks, want] of keep)
    it(`spare ${spare}, ${gatewayTasks} gateway tasks: ${want}`, () =>
      assert.equal(spareAction({ spare, gatewayTasks }), want));
});

describe('parseAssignment', () => {
  const ok = assignmentLine([
    { port: 41000, socket: '/run/episodic/gw-0.sock' },
    { port: 41099, socket: '/run/episodic/proxy.sock' },
  ]);
  it('a task: its ports and sockets under /run/episodic', () =>
    assert.deepEqual(parseAssignment(ok), [
      { port: 41000, socket: '/run/episodic/gw-0.sock' },
      { port: 41099, socket: '/run/episodic/proxy.sock' },
    ]));
  const bad: Array<[string, RegExp]> = [
    ['', /not a listen line/],
    ['listen', /1 to 16 pairs/],
    ['connect 41000=/run/episodic/gw-0.sock', /not a listen line/],
    ['listen 41000', /not PORT=SOCKET/],
    ['listen 80=/run/episodic/gw-0.sock', /outside 1024/],
    ['listen 70000=/run/episodic/gw-0.sock', /outside 1024/],
    ['listen 41000=/tmp/x.sock', /not directly under/],
    ['listen 41000=/run/episodic/../../tmp/x.sock', /not directly under/],
    ['listen 41000=/run/episodic/a/b.sock', /not directly under/],
    ['listen 41000=/run/episodic/gw-0.sock 41000=/run/episodic/gw-1.sock', /a port twice/],
    ['listen 4100a=/run/episodic/gw-0.sock', /not PORT=SOCKET/],
    [`listen ${Array.from({ length: 17 }, (_, i) => `${41000 + i}=/run/episodic/g${i}.sock`).join(' ')}`, /1 to 16/],
    [`listen 41000=/run/episodic/${'a'.repeat(5000)}.sock`, /longer than its bound/],
  ];
  for (const [line, why] of bad)
    it(`refused: ${JSON.stringify(line.slice(0, 60))}`, () => assert.throws(() => parseAssignment(line), why));
});

function freePort(): Promise<number> {
  const server = createServer();
  return new Promise((ok) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => ok(port));
    }),
  );
}

describe('the relay process, unbound', () => {
  const relay = () =>
    spawn(NODE, [join(REPO, 'controller/executors/sandbox/relay.ts'), '--spare'], { stdio: ['pipe', 'pipe', 'pipe'] });
  const said = (child: ChildProcess, word: string) =>
    new Promise<void>((ok) => {
      let out = '';
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes(`${word}\n`)) ok();
      });
    });
  const exit = (child: ChildProcess) =>
    new Promise<{ code: number | null; err: string }>((ok) => {
      let err = '';
      child.stderr?.on('data', (d: Buffer) => {
        err += d.toString();
      });
      child.once('exit', (code) => ok({ code, err }));
    });

  it('says spare, bound to nothing; ends when its parent pipe closes', async () => {
    const child = relay();
    const ended = exit(child);
    await said(child, 'spare');
    assert.equal(child.exitCode, null, 'still running, unassigned');
    child.stdin?.end();
    assert.equal((await ended).code, 0);
  });

  it('a bad assignment ends it before it listens anywhere', async () => {
    const child = relay();
    const ended = exit(child);
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    await said(child, 'spare');
    child.stdin?.write('listen 41000=/tmp/elsewhere.sock\n');
    const { code, err } = await ended;
    assert.equal(code, 126);
    assert.match(err, /not directly under \/run\/episodic/);
    assert.equal(out, 'spare\n', 'never ready');
  });

  it('serves one task: a second assignment ends it', async () => {
    const child = relay();
    const ended = exit(child);
    await said(child, 'spare');
    const ready = said(child, 'ready');
    // Port 0 is refused: a port this host's loopback just had free (outside a sandbox; nothing connects to it).
    const port = await freePort();
    child.stdin?.write(`listen ${port}=/run/episodic/gw-0.sock\n`);
    await ready;
    child.stdin?.write(`listen ${port + 1}=/run/episodic/gw-1.sock\n`);
    const { code, err } = await ended;
    assert.equal(code, 126);
    assert.match(err, /already serving a task/);
  });
});
