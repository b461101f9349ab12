// When the gateway's meter and the agent's own report are far enough apart to be noted in the record.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LastEpisode } from '../../controller/api/agent-task.ts';
import { countedUSD, episodeRecordOf } from '../../controller/api/episode-record.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import { LARGE_DISAGREEMENT_RATIO, meterDisagreement } from '../../controller/api/meter-disagreement.ts';

const t = (input: number, output: number) => ({ input, output, cacheRead: 0, cacheWrite: 0 });

describe('meterDisagreement', () => {
  const cases: Array<
    [
      string,
      { costUSD: number; tokens?: ReturnType<typeof t> },
      { costUSD: number; tokens: ReturnType<typeof t> },
      RegExp | undefined,
    ]
  > = [
    ['equal figures', { costUSD: 1, tokens: t(10_000, 1000) }, { costUSD: 1, tokens: t(10_000, 1000) }, undefined],
    [
      '20 % apart: ordinary',
      { costUSD: 0.8, tokens: t(8000, 800) },
      { costUSD: 1, tokens: t(10_000, 1000) },
      undefined,
    ],
    [
      'the agent reported 30 % less cost',
      { costUSD: 0.7, tokens: t(10_000, 1000) },
      { costUSD: 1, tokens: t(10_000, 1000) },
      /^cost: the agent reported \$0\.7000, the gateway metered \$1\.0000 \(more than 25 % apart/,
    ],
    [
      'the agent reported ten times the tokens',
      { costUSD: 1, tokens: t(100_000, 10_000) },
      { costUSD: 1, tokens: t(10_000, 1000) },
      /^tokens \(input \+ output\): the agent reported 110000, the gateway metered 11000/,
    ],
    [
      'both far apart: both named',
      { costUSD: 0.1, tokens: t(1000, 100) },
      { costUSD: 1, tokens: t(10_000, 1000) },
      /^cost: .*; tokens .*/,
    ],
    [
      'far apart in ratio but under a cent',
      { costUSD: 0.001, tokens: t(10, 1) },
      { costUSD: 0.009, tokens: t(90, 9) },
      undefined,
    ],
    ['the agent reported nothing (text output)', { costUSD: 0 }, { costUSD: 1, tokens: t(10_000, 1000) }, undefined],
    [
      'a loop the agent did not count: reported one request of twenty',
      { costUSD: 0.05, tokens: t(10_000, 1000) },
      { costUSD: 1, tokens: t(200_000, 20_000) },
      /cost: .*tokens/,
    ],
  ];
  for (const [name, agent, metered, want] of cases)
    it(name, () => {
      const note = meterDisagreement(agent, metered);
      if (want) assert.match(note ?? '', want);
      else assert.equal(note, undefined);
    });

  it('the ratio is a quarter', () => assert.equal(LARGE_DISAGREEMENT_RATIO, 0.25));
});

describe('episodeRecordOf behind the gateway', () => {
  const last: LastEpisode = {
    number: 1,
    outcome: 'succeeded',
    startedAt: '2026-12-02T00:00:00Z',
    finishedAt: '2026-12-02T00:01:00Z',
    // What status counted: the gateway's figure.
    costUSD: 1,
  } as LastEpisode;
  const gateway = { requests: 20, tokens: t(200_000, 20_000), costUSD: 1 };

  it("keeps the agent's own report at the top, the meter in gateway, and notes a large gap", () => {
    const result = episodeResult({ exitCode: 0, costUSD: 0.05, tokens: t(10_000, 1000), gateway });
    const r = episodeRecordOf('x', last, undefined, result);
    assert.equal(r.costUSD, 0.05);
    assert.deepEqual(r.tokens, t(10_000, 1000));
    assert.equal(r.gateway?.costUSD, 1);
    assert.match(r.gateway?.disagreement ?? '', /the agent reported \$0\.0500, the gateway metered \$1\.0000/);
    assert.equal(countedUSD(r), 1);
  });

  it('no note when they agree; without a gateway the record is what status counted', () => {
    const close = episodeRecordOf(
      'x',
      last,
      undefined,
      episodeResult({ exitCode: 0, costUSD: 0.95, tokens: t(190_000, 19_000), gateway }),
    );
    assert.equal(close.gateway?.disagreement, undefined);
    const plain = episodeRecordOf('x', last, undefined, episodeResult({ exitCode: 0, costUSD: 0.7 }));
    assert.equal(plain.costUSD, 1);
    assert.equal(countedUSD(plain), 1);
  });
});
