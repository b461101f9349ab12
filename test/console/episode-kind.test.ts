// The timeline's colour rule: every outcome maps to a kind the stylesheet colours, and the kinds the issue names
// (a failed gate, a retry, a usage-limit wait, a cancel) each look different from each other and from the rest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OUTCOMES } from '../../controller/api/agent-task-status.ts';
import { APP_CSS } from '../../controller/console/assets.ts';
import { kindOf, kindWords, LEGEND } from '../../controller/console/web/episode-kind.ts';

/** .o-KIND → its background, from the stylesheet the console serves. */
function backgrounds(css: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [, selectors, body] of css.matchAll(/([^{}]+)\{([^}]*)\}/g)) {
    const bg = /background:\s*([^;]+);/.exec(body)?.[1].trim();
    if (!bg) continue;
    for (const s of selectors.split(',')) {
      const kind = /^\.o-([A-Za-z]+)$/.exec(s.trim())?.[1];
      if (kind) out.set(kind, bg);
    }
  }
  return out;
}

const gate = (exitCode: number | null) => [{ name: 'test', exitCode }] as never;

test('kindOf: a failed gate first, then retries, usage-limit waits and cancels; else the outcome', () => {
  const cases: Array<[string, Parameters<typeof kindOf>[0], string]> = [
    ['succeeded', { outcome: 'succeeded' }, 'succeeded'],
    ['continue', { outcome: 'continue' }, 'continue'],
    ['a failed gate over a continue', { outcome: 'continue', gates: gate(1) }, 'gateFailed'],
    ['a gate that never finished (null) failed', { outcome: 'succeeded', gates: gate(null) }, 'gateFailed'],
    ['a passed gate keeps the outcome', { outcome: 'succeeded', gates: gate(0) }, 'succeeded'],
    ['transient is a retry', { outcome: 'transient' }, 'retry'],
    ['timeout is a retry', { outcome: 'timeout' }, 'retry'],
    ['usage limit', { outcome: 'usageLimit' }, 'usageLimit'],
    ['cancelled', { outcome: 'cancelled' }, 'cancel'],
    ['interrupted is a cancel', { outcome: 'interrupted' }, 'cancel'],
    ['failed', { outcome: 'failed' }, 'failed'],
    ['fatal', { outcome: 'fatal' }, 'fatal'],
    ['skipped', { outcome: 'skipped' }, 'skipped'],
  ];
  for (const [why, e, kind] of cases) assert.equal(kindOf(e), kind, why);
});

test('every kind has a colour; gate failed, retry, usage limit and cancel each differ from all other legend kinds', () => {
  const bg = backgrounds(APP_CSS);
  for (const o of OUTCOMES) assert.ok(bg.has(kindOf({ outcome: o })), `.o-${kindOf({ outcome: o })} for ${o}`);
  for (const [kind] of LEGEND) assert.ok(bg.has(kind), `.o-${kind} in the legend has a colour`);
  for (const named of ['gateFailed', 'retry', 'usageLimit', 'cancel']) {
    for (const [other] of LEGEND) {
      if (other !== named) assert.notEqual(bg.get(named), bg.get(other), `${named} and ${other} look different`);
    }
  }
});

test('hover words: the outcome, and what the colour adds only when it says more', () => {
  assert.equal(kindWords('gateFailed', 'succeeded'), 'succeeded, a gate failed (a fix episode follows)');
  assert.equal(kindWords('retry', 'transient'), 'transient, retried');
  assert.equal(kindWords('usageLimit', 'usageLimit'), 'usage limit: waited');
  assert.equal(kindWords('cancel', 'cancelled'), 'cancelled');
  assert.equal(kindWords('cancel', 'interrupted'), 'interrupted, cancelled');
  assert.equal(kindWords('succeeded', 'succeeded'), 'succeeded');
});
