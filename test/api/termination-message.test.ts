import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TERMINATION_MESSAGE_LIMIT } from '../../controller/api/episode-config.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import {
  decodeTerminationMessage,
  encodeTerminationMessage,
  MESSAGE_FLOOR,
} from '../../controller/api/termination-message.ts';

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

describe('termination message', () => {
  const result = episodeResult({
    exitCode: 0,
    format: 'claude',
    completion: 'promise',
    costUSD: 0.0734,
    tokens: { input: 5050, output: 310, cacheRead: 12000, cacheWrite: 0 },
    message: 'All done. <promise>COMPLETE</promise>',
    durationMs: 18342,
  });

  it('round-trips a result as compact JSON with the message last', () => {
    const text = encodeTerminationMessage(result);
    assert.doesNotMatch(text, /\n/);
    assert.match(text, /,"message":"All done\. <promise>COMPLETE<\/promise>"\}$/);
    assert.deepEqual(decodeTerminationMessage(text), result);
  });

  it('shortens the message until the JSON fits, never splitting a character', () => {
    for (const unit of ['\u0001', '😀', 'é', '"', 'x']) {
      const huge = episodeResult({ exitCode: 1, message: unit.repeat(1000 / unit.length) });
      const text = encodeTerminationMessage(huge);
      assert.ok(bytes(text) <= TERMINATION_MESSAGE_LIMIT, `${unit}: ${bytes(text)} bytes`);
      const decoded = decodeTerminationMessage(text);
      assert.equal(decoded?.exitCode, 1);
      assert.ok(decoded?.message?.startsWith(unit), unit);
      assert.doesNotMatch(decoded?.message ?? '', /\uFFFD/);
    }
    const tiny = encodeTerminationMessage(episodeResult({ exitCode: 1, message: 'x'.repeat(1000) }), 300);
    assert.ok(bytes(tiny) <= 300, tiny);
    assert.match(decodeTerminationMessage(tiny)?.message ?? '', /^x+…$/);
  });

  it('salvages a message cut off by the kubelet', () => {
    const text = encodeTerminationMessage(
      episodeResult({ exitCode: 3, errorClass: 'transient', message: 'y'.repeat(900) }),
    );
    const decoded = decodeTerminationMessage(text.slice(0, text.length - 400));
    assert.equal(decoded?.exitCode, 3);
    assert.equal(decoded?.errorClass, 'transient');
    assert.match(decoded?.message ?? '', /^y+… \(termination message was truncated\)$/);
  });

  it('salvages the facts when the cut falls outside the message', () => {
    const text = encodeTerminationMessage(result);
    const cut = text.slice(0, text.indexOf('"message"') + 4); // inside the key
    const decoded = decodeTerminationMessage(cut);
    assert.equal(decoded?.completion, 'promise');
    assert.equal(decoded?.costUSD, 0.0734);
    assert.equal(decoded?.message, '(termination message was truncated)');
  });

  it('tolerates surrounding noise and returns undefined for garbage', () => {
    assert.deepEqual(decodeTerminationMessage(`\n${encodeTerminationMessage(result)}\n`), result);
    for (const junk of [
      '',
      'Error: OOMKilled',
      '{}',
      '{"hello":"world"}',
      '{"exitCode":"zero"}',
      '{"exitCode":',
      '[1,2]',
      'null',
    ]) {
      assert.equal(decodeTerminationMessage(junk), undefined, JSON.stringify(junk));
    }
  });
});

describe('termination message with gate runs', () => {
  it('cuts the gate output tails first: a result with big gate outputs still fits and decodes with its verdicts', () => {
    const gates = Array.from({ length: 8 }, (_, i) => ({
      name: `gate-${i}`,
      fixExitCode: 0,
      exitCode: i === 7 ? 1 : 0,
      durationMs: 1234,
      output: `${'é'.repeat(1990)}tail-${i}`,
    }));
    const big = episodeResult({ exitCode: 0, completion: 'promise', message: 'done, gates ran', gates });
    const text = encodeTerminationMessage(big);
    assert.ok(bytes(text) <= TERMINATION_MESSAGE_LIMIT, `${bytes(text)} bytes`);
    const decoded = decodeTerminationMessage(text);
    assert.equal(decoded?.message, 'done, gates ran'); // the message is kept whole: tails went first
    assert.deepEqual(
      decoded?.gates?.map((g) => [g.name, g.exitCode, g.fixExitCode]),
      gates.map((g) => [g.name, g.exitCode, 0]),
    );
    for (const [i, g] of (decoded?.gates ?? []).entries()) {
      assert.ok(g.output?.endsWith(`tail-${i}`), g.output);
      assert.ok(g.output?.startsWith('…'));
    }
  });

  it('drops the outputs when even empty tails leave no room, and then shortens the message', () => {
    const gates = [{ name: 'test', exitCode: 1, output: 'x'.repeat(2000) }];
    const text = encodeTerminationMessage(episodeResult({ exitCode: 0, message: 'm'.repeat(1000), gates }), 400);
    assert.ok(bytes(text) <= 400, text);
    const decoded = decodeTerminationMessage(text);
    assert.equal(decoded?.gates?.[0].exitCode, 1);
    assert.equal(decoded?.gates?.[0].output, undefined);
    assert.match(decoded?.message ?? '', /^m+…$/);
  });

  it('beside ops at their budget: the ops stay, the gate verdicts stay, the gate tails give way', () => {
    const ops = Array.from({ length: 4 }, (_, i) => ({ op: 'set' as const, key: `k${i}`, value: 'v'.repeat(400) }));
    const gates = ['lint', 'test'].map((name) => ({ name, exitCode: 1, output: `${'o'.repeat(1995)}|tail` }));
    const text = encodeTerminationMessage(episodeResult({ exitCode: 0, message: 'done', ops, gates }));
    assert.ok(bytes(text) <= TERMINATION_MESSAGE_LIMIT, `${bytes(text)} bytes`);
    const decoded = decodeTerminationMessage(text);
    assert.deepEqual(decoded?.ops, ops);
    assert.deepEqual(
      decoded?.gates?.map((g) => [g.name, g.exitCode]),
      [
        ['lint', 1],
        ['test', 1],
      ],
    );
    assert.ok(decoded?.gates?.every((g) => g.output?.endsWith('|tail') && g.output.length < 1500));
    assert.equal(decoded?.message, 'done');
  });
});

describe('termination message with scope facts', () => {
  it('the worst-case scope facts beside ops at their budget and gate runs: all verdicts and the scope stay', () => {
    const long = (i: number) => `${'d/'.repeat(49)}${i}`.slice(0, 100);
    const scope = {
      onViolation: 'Revert' as const,
      count: 64,
      paths: [0, 1, 2, 3, 4].map(long),
      reverted: 10,
      unrestored: [5, 6, 7].map(long),
      unrestoredCount: 54,
    };
    const ops = Array.from({ length: 4 }, (_, i) => ({ op: 'set' as const, key: `k${i}`, value: 'v'.repeat(400) }));
    const gates = ['lint', 'test'].map((name) => ({ name, exitCode: 1, output: `${'o'.repeat(1995)}|tail` }));
    const text = encodeTerminationMessage(episodeResult({ exitCode: 0, message: 'done', ops, gates, scope }));
    assert.ok(bytes(text) <= TERMINATION_MESSAGE_LIMIT, `${bytes(text)} bytes`);
    const decoded = decodeTerminationMessage(text);
    assert.deepEqual(decoded?.scope, scope);
    assert.deepEqual(decoded?.ops, ops);
    assert.deepEqual(
      decoded?.gates?.map((g) => g.exitCode),
      [1, 1],
    );
  });

  it('a skipped result round-trips', () => {
    const skipped = episodeResult({
      exitCode: null,
      skipped: { reason: 'SkipWhen' },
      message: 'PLAN.md has 2 pending items',
    });
    assert.deepEqual(decodeTerminationMessage(encodeTerminationMessage(skipped)), skipped);
  });
});

describe('termination message: outputs', () => {
  const fullOutputs = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`KEY_${i}`, `${i}`.padEnd(248, 'v')]));

  it('keeps outputs whole beside a short message', () => {
    const small = episodeResult({
      exitCode: 0,
      outputs: { FILES: 'a.ts b.ts', NOTE: '"quoted"\nline' },
      message: 'ok',
    });
    assert.deepEqual(decodeTerminationMessage(encodeTerminationMessage(small)), small);
  });

  it('4 KiB of outputs and a long message: fits, the message keeps its head, dropped outputs are named', () => {
    const big = episodeResult({
      exitCode: 0,
      completion: 'promise',
      outputs: fullOutputs,
      outputsNote: 'outputs dropped: "x-y" (not a C identifier)',
      message: 'm'.repeat(1000),
    });
    const text = encodeTerminationMessage(big);
    assert.ok(bytes(text) <= TERMINATION_MESSAGE_LIMIT, `${bytes(text)} bytes`);
    const decoded = decodeTerminationMessage(text);
    assert.ok(decoded);
    assert.equal(decoded.completion, 'promise');
    assert.ok((decoded.message?.length ?? 0) >= MESSAGE_FLOOR, 'the message keeps its floor');
    const kept = Object.keys(decoded.outputs ?? {});
    assert.ok(kept.length > 0 && kept.length < 16, `${kept.length} kept`);
    for (const key of kept) assert.equal(decoded.outputs?.[key], fullOutputs[key], 'kept outputs are whole');
    const left = Object.keys(fullOutputs).filter((k) => !kept.includes(k));
    assert.deepEqual(kept, Object.keys(fullOutputs).slice(0, kept.length), 'the last published go first');
    assert.match(
      decoded.outputsNote ?? '',
      /^outputs dropped: "x-y" \(not a C identifier\); outputs left out of the termination message: /,
    );
    for (const key of left) assert.match(decoded.outputsNote ?? '', new RegExp(`\\b${key}\\b`));
  });

  it('without room for any output: none kept, all named, still a result', () => {
    const text = encodeTerminationMessage(
      episodeResult({ exitCode: 0, outputs: fullOutputs, message: 'x'.repeat(900) }),
      700,
    );
    assert.ok(bytes(text) <= 700, `${bytes(text)} bytes`);
    const decoded = decodeTerminationMessage(text);
    assert.equal(decoded?.outputs, undefined);
    assert.match(decoded?.outputsNote ?? '', /left out of the termination message: KEY_0, KEY_1/);
  });
});
