// What needs a person, as an episode's evidence: what an entry of DISCOVERY.md / IDEAS.md is, `[!]` items of a
// plan, entries added and removed across an episode (real files), and the byte budget that keeps the facts
// inside a pod's 4096-byte termination message beside a full-length message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EPISODE_MESSAGE_MAX, REVIEW_EVIDENCE_BYTES } from '../../controller/api/bounds.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import { collectReview, fitReview, snapshotReview } from '../../controller/executors/evidence/review.ts';
import { flaggedItems, reviewEntries } from '../../controller/executors/evidence/review-entries.ts';
import { decodeTerminationMessage, encodeTerminationMessage } from '../../controller/api/termination-message.ts';

test('reviewEntries: list items, headings with text under them, paragraphs; titles are no entries; a fenced block, blank lines and all, belongs to its entry', () => {
  const md = [
    '# Discoveries',
    '',
    '## 2026-11-25',
    '',
    '- The API is paginated;',
    '  the client reads page 1 only.',
    '  - a sub-item belongs to its item',
    '* Tests   need a database',
    '1. numbered too',
    '',
    '## Auth uses JWT',
    'The plan assumed sessions.',
    '',
    'A plain paragraph',
    'over two lines.',
    '```',
    '- not an item inside a fence',
    '',
    '# nor a heading',
    '```',
  ].join('\n');
  assert.deepEqual(reviewEntries(md), [
    'The API is paginated; the client reads page 1 only. - a sub-item belongs to its item',
    'Tests need a database',
    'numbered too',
    'Auth uses JWT The plan assumed sessions.',
    'A plain paragraph over two lines. ``` - not an item inside a fence # nor a heading ```',
  ]);
  assert.deepEqual(reviewEntries(''), []);
});

test('flaggedItems: the text of every [!] item, whatever its list marker', () => {
  const plan =
    '- [x] done\n- [!] migrate sessions: no Redis in CI\n  * [!]   nested one\n3. [!]\n- [ ] later\n[!] not an item';
  assert.deepEqual(flaggedItems(plan), ['migrate sessions: no Redis in CI', 'nested one', '(no text)']);
});

test('collectReview: entries added and removed across an episode, [!] items after it; files outside are not read', () => {
  const ws = mkdtempSync(join(tmpdir(), 'review-'));
  const outside = mkdtempSync(join(tmpdir(), 'review-out-'));
  try {
    writeFileSync(join(ws, 'DISCOVERY.md'), '# Discoveries\n\n- old one\n- goes away\n');
    const before = snapshotReview(ws);
    assert.equal(before.size, 2);
    writeFileSync(join(ws, 'DISCOVERY.md'), '# Discoveries\n\n- old one\n- new one\n');
    writeFileSync(join(ws, 'IDEAS.md'), '- an idea\n');
    writeFileSync(join(ws, 'PLAN.md'), '- [x] a\n- [!] b needs a person\n');
    const review = collectReview(ws, before);
    assert.deepEqual(review.flagged, ['b needs a person']);
    assert.deepEqual(
      review.added?.map((e) => [e.file, e.text]),
      [
        ['DISCOVERY.md', 'new one'],
        ['IDEAS.md', 'an idea'],
      ],
    );
    assert.equal(review.removed?.length, 1);
    assert.equal(review.flaggedMore, undefined, 'empty fields are left out');

    // A plan file named by spec.progress.checklist; a symlink out of the workspace is never read.
    writeFileSync(join(outside, 'secret.md'), '- [!] secret\n');
    symlinkSync(join(outside, 'secret.md'), join(ws, 'TODO.md'));
    assert.deepEqual(collectReview(ws, snapshotReview(ws), 'TODO.md'), {});
    // A FIFO in place of a file is not opened (that would block until a writer came).
    rmSync(join(ws, 'IDEAS.md'));
    execFileSync('mkfifo', [join(ws, 'IDEAS.md')]);
    assert.equal(snapshotReview(ws).size, 2);
  } finally {
    rmSync(ws, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  }
});

test('fitReview: within its byte budget, flagged items first, the rest counted', () => {
  const long = (i: number) => `${'é'.repeat(110)} ${i}`;
  const flagged = Array.from({ length: 6 }, (_, i) => long(i));
  const added = Array.from({ length: 6 }, (_, i) => ({
    file: 'IDEAS.md' as const,
    text: long(i),
    digest: i.toString(16).padStart(12, '0'),
  }));
  const review = fitReview(flagged, added, ['0123456789ab']);
  assert.ok(Buffer.byteLength(JSON.stringify(review)) <= REVIEW_EVIDENCE_BYTES);
  const kept = (review.flagged?.length ?? 0) + (review.added?.length ?? 0);
  assert.ok(kept >= 2, `some items kept (${kept})`);
  assert.equal(kept + (review.flaggedMore ?? 0) + (review.addedMore ?? 0), 12, 'every item is listed or counted');
  assert.equal(review.added, undefined, 'the budget went to the flagged items first');
});

test('termination message: a full review budget beside a full-length message fits and decodes intact', () => {
  const flagged = Array.from({ length: 20 }, (_, i) => `${'x'.repeat(110)} ${i}`);
  const review = fitReview(flagged, [], []);
  const result = episodeResult({
    exitCode: 0,
    message: 'm'.repeat(EPISODE_MESSAGE_MAX),
    evidence: {
      review,
      workspace: { kind: 'git', changed: true, headBefore: 'a'.repeat(40), headAfter: 'b'.repeat(40) },
      checklist: { done: 1, total: 3, inProgress: 0, failed: 1, skipped: 0 },
    },
  });
  const encoded = encodeTerminationMessage(result);
  assert.ok(Buffer.byteLength(encoded) <= 4096);
  const decoded = decodeTerminationMessage(encoded);
  assert.deepEqual(decoded?.evidence?.review, review);
  assert.equal(decoded?.message, result.message, 'the message was not cut for it');
});

test('termination message: beside ops at their budget, review items stay; when even facts crowd it, they give way to counts before any op does', () => {
  const flagged = Array.from({ length: 20 }, (_, i) => `${'x'.repeat(110)} ${i}`);
  const review = fitReview(flagged, [], ['0123456789ab']);
  const listed = review.flagged?.length ?? 0;
  const ops = Array.from({ length: 6 }, (_, i) => ({ op: 'set' as const, key: `k${i}`, value: 'v'.repeat(400) }));
  const result = episodeResult({ exitCode: 0, message: 'm'.repeat(EPISODE_MESSAGE_MAX), ops, evidence: { review } });
  const alone = decodeTerminationMessage(encodeTerminationMessage({ ...result, evidence: undefined }));
  assert.ok((alone?.ops?.length ?? 0) >= 4);
  const both = decodeTerminationMessage(encodeTerminationMessage(result));
  assert.deepEqual(both?.ops, alone?.ops, 'as many ops as without review facts');
  assert.deepEqual(both?.evidence?.review, review, 'the message was cut, not the review facts');

  // Eight gate verdicts and the fullest other evidence as well: the facts alone no longer fit beside the ops.
  const gates = Array.from({ length: 8 }, (_, i) => ({ name: `${'g'.repeat(60)}${i}`, exitCode: 1, durationMs: 1234 }));
  const sha = (c: string) => c.repeat(40);
  const workspace = {
    kind: 'git' as const,
    changed: true,
    headBefore: sha('a'),
    headAfter: sha('b'),
    commit: sha('c'),
  };
  const ralph = { status: 's'.repeat(64), testsStatus: 't'.repeat(64), workType: 'w'.repeat(64), tasksCompleted: 9 };
  const evidence = { review, workspace, errorFingerprint: 'e'.repeat(200), ralph };
  const crowded = { ...result, gates, evidence };
  const encoded = encodeTerminationMessage(crowded);
  assert.ok(Buffer.byteLength(encoded) <= 4096);
  const decoded = decodeTerminationMessage(encoded);
  assert.deepEqual(decoded?.ops, alone?.ops, 'every op still kept');
  assert.equal(decoded?.gates?.length, 8);
  assert.deepEqual(decoded?.evidence?.review, {
    removed: ['0123456789ab'],
    flaggedMore: listed + (review.flaggedMore ?? 0),
  });
});
