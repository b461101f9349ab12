import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  LIMIT_WINDOW_MS,
  MAX_LIMIT_WAIT_MS,
  chooseCredential,
  headroom,
  poolPausedUntil,
  requestStep,
} from '../../controller/reconciler/credential-governor.ts';
import type { Choice, CredentialFacts } from '../../controller/reconciler/credential-governor.ts';

const now = new Date('2026-06-01T12:00:00Z');
const at = (ms: number) => new Date(now.getTime() + ms);
const cred = (name: string, over: Partial<CredentialFacts> = {}): CredentialFacts => ({
  name,
  recent: { requests: 0, tokens: 0 },
  ...over,
});

describe('headroom: the smallest share left of any known limit', () => {
  const rows: Array<[string, CredentialFacts, number]> = [
    ['no limits known', cred('a'), 1],
    ['own rpm half used', cred('a', { limits: { requestsPerMinute: 10 }, recent: { requests: 5, tokens: 0 } }), 0.5],
    [
      'own tpm is the tighter',
      cred('a', {
        limits: { requestsPerMinute: 10, tokensPerMinute: 1000 },
        recent: { requests: 1, tokens: 900 },
      }),
      0.1,
    ],
    ['over the own limit is 0', cred('a', { limits: { requestsPerMinute: 2 }, recent: { requests: 3, tokens: 0 } }), 0],
    [
      "the provider's figures",
      cred('a', { seen: { requestsRemaining: 25, requestsLimit: 100, resetAt: at(30_000) } }),
      0.25,
    ],
    [
      "the provider's figures past their reset say nothing",
      cred('a', { seen: { requestsRemaining: 0, requestsLimit: 100, resetAt: at(-1) } }),
      1,
    ],
    ['remaining 0 with no limit header', cred('a', { seen: { tokensRemaining: 0 } }), 0],
  ];
  for (const [name, facts, want] of rows)
    it(name, () => assert.equal(Math.round(headroom(facts, now) * 1000) / 1000, want));
});

describe('chooseCredential: which credential the next request goes out on', () => {
  const half = { limits: { requestsPerMinute: 10 }, recent: { requests: 5, tokens: 0 } };
  const full = { limits: { requestsPerMinute: 10 }, recent: { requests: 10, tokens: 0, oldestAt: at(-20_000) } };
  const nearlyFull = { limits: { requestsPerMinute: 100 }, recent: { requests: 95, tokens: 0 } };
  const rows: Array<[string, CredentialFacts[], { sticky?: string; tried?: string[] }, Choice]> = [
    ['one credential', [cred('a')], {}, { kind: 'use', name: 'a' }],
    ['the most headroom', [cred('a', half), cred('b')], {}, { kind: 'use', name: 'b' }],
    [
      'a tie: the one that sent least',
      [cred('a', { recent: { requests: 3, tokens: 0 } }), cred('b')],
      {},
      { kind: 'use', name: 'b' },
    ],
    ['a tie at nothing sent: the spec order', [cred('a'), cred('b')], {}, { kind: 'use', name: 'a' }],
    [
      'sticky while it has headroom, even if another has more',
      [cred('a', half), cred('b')],
      { sticky: 'a' },
      { kind: 'use', name: 'a' },
    ],
    ['sticky left below 10% headroom', [cred('a', nearlyFull), cred('b')], { sticky: 'a' }, { kind: 'use', name: 'b' }],
    [
      'a paused credential is skipped, sticky or not',
      [cred('a', { pausedUntil: at(3_600_000) }), cred('b', half)],
      { sticky: 'a' },
      { kind: 'use', name: 'b' },
    ],
    [
      'a cooling credential (retry-after) is skipped',
      [cred('a', { coolUntil: at(1000) }), cred('b', half)],
      {},
      { kind: 'use', name: 'b' },
    ],
    ['a pause that passed is no pause', [cred('a', { pausedUntil: at(-1) })], {}, { kind: 'use', name: 'a' }],
    [
      'failover: the tried one is not chosen again',
      [cred('a'), cred('b', half)],
      { tried: ['a'] },
      { kind: 'use', name: 'b' },
    ],
    ['every credential tried', [cred('a'), cred('b')], { tried: ['a', 'b'] }, { kind: 'none' }],
    [
      'all paused: wait for the earliest reset',
      [cred('a', { pausedUntil: at(7_200_000) }), cred('b', { pausedUntil: at(3_600_000) })],
      {},
      { kind: 'wait', until: at(3_600_000), paused: true },
    ],
    [
      'paused and cooling: not all paused, wait for the cool-down',
      [cred('a', { pausedUntil: at(7_200_000) }), cred('b', { coolUntil: at(2000) })],
      {},
      { kind: 'wait', until: at(2000), paused: false },
    ],
    [
      "all at their own limit: wait until the minute's oldest request leaves it",
      [cred('a', full)],
      {},
      { kind: 'wait', until: at(-20_000 + LIMIT_WINDOW_MS), paused: false },
    ],
    [
      'the provider says none left: wait for its reset',
      [cred('a', { seen: { requestsRemaining: 0, resetAt: at(5000) } })],
      {},
      { kind: 'wait', until: at(5000), paused: false },
    ],
  ];
  for (const [name, credentials, extra, want] of rows)
    it(name, () => assert.deepEqual(chooseCredential({ credentials, now, ...extra }), want));
});

describe('poolPausedUntil: every credential at a usage limit', () => {
  const rows: Array<[string, CredentialFacts[], Date | undefined]> = [
    ['none paused', [cred('a'), cred('b')], undefined],
    ['one of two paused', [cred('a', { pausedUntil: at(1000) }), cred('b')], undefined],
    [
      'both paused: the earliest reset',
      [cred('a', { pausedUntil: at(9000) }), cred('b', { pausedUntil: at(4000) })],
      at(4000),
    ],
    [
      'a pause that passed frees the pool',
      [cred('a', { pausedUntil: at(9000) }), cred('b', { pausedUntil: at(0) })],
      undefined,
    ],
    ['cooling is not paused', [cred('a', { coolUntil: at(9000) })], undefined],
    ['an empty pool', [], undefined],
  ];
  for (const [name, credentials, want] of rows)
    it(name, () => assert.deepEqual(poolPausedUntil(credentials, now), want));
});

describe('requestStep: what a request does with the choice', () => {
  const rows: Array<[string, Choice, boolean, ReturnType<typeof requestStep>]> = [
    ['a credential: send on it', { kind: 'use', name: 'a' }, false, { kind: 'send', name: 'a' }],
    ['a credential after a failover: send', { kind: 'use', name: 'b' }, true, { kind: 'send', name: 'b' }],
    [
      'per-minute limits free in 20 s: wait for it',
      { kind: 'wait', until: at(20_000), paused: false },
      false,
      { kind: 'wait', ms: 20_000 },
    ],
    [
      'exactly the longest wait',
      { kind: 'wait', until: at(LIMIT_WINDOW_MS), paused: false },
      false,
      { kind: 'wait', ms: 60_000 },
    ],
    [
      'longer than that: refused',
      { kind: 'wait', until: at(60_001), paused: false },
      false,
      { kind: 'refuse', until: at(60_001) },
    ],
    ['a wait already over: at once', { kind: 'wait', until: at(-5), paused: false }, false, { kind: 'wait', ms: 0 }],
    [
      'every credential at a usage limit: refused, however soon',
      { kind: 'wait', until: at(1000), paused: true },
      false,
      { kind: 'refuse', until: at(1000) },
    ],
    [
      'an answer held: it goes back rather than wait',
      { kind: 'wait', until: at(1000), paused: false },
      true,
      { kind: 'answer' },
    ],
    ['every credential tried: the held answer goes back', { kind: 'none' }, true, { kind: 'answer' }],
    ['none and nothing held: refused now', { kind: 'none' }, false, { kind: 'refuse', until: now }],
  ];
  for (const [name, choice, holding, want] of rows)
    it(name, () => assert.deepEqual(requestStep(choice, holding, now), want));
  it('the longest wait is the per-minute window', () => assert.equal(MAX_LIMIT_WAIT_MS, LIMIT_WINDOW_MS));
});
