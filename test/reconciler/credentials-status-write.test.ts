import assert from 'node:assert/strict';
import { it } from 'node:test';
import { statusWriteDelay } from '../../controller/reconciler/credentials-status-write.ts';

const rows: Array<[string, Parameters<typeof statusWriteDelay>[0], ReturnType<typeof statusWriteDelay>]> = [
  ['first write: at once', { urgent: false, inFlight: false, now: 100 }, { kind: 'write', delayMs: 0 }],
  [
    'counters 1 s after a write: 4 s later',
    { urgent: false, inFlight: false, lastAt: 0, now: 1000 },
    { kind: 'write', delayMs: 4000 },
  ],
  [
    'counters past the interval: at once',
    { urgent: false, inFlight: false, lastAt: 0, now: 9000 },
    { kind: 'write', delayMs: 0 },
  ],
  [
    'a pause right after a write: at once',
    { urgent: true, inFlight: false, lastAt: 0, now: 10 },
    { kind: 'write', delayMs: 0 },
  ],
  [
    'a pause while a write is in flight: after it',
    { urgent: true, inFlight: true, lastAt: 0, now: 10 },
    { kind: 'wait' },
  ],
  ['counters while a write is in flight: after it', { urgent: false, inFlight: true, now: 10 }, { kind: 'wait' }],
  [
    'own interval',
    { urgent: false, inFlight: false, lastAt: 0, now: 10, intervalMs: 100 },
    { kind: 'write', delayMs: 90 },
  ],
];

for (const [name, facts, want] of rows)
  it(`statusWriteDelay: ${name}`, () => assert.deepEqual(statusWriteDelay(facts), want));
