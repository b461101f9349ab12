// Resume requests written once and read once per mode (issue 27 §3): on a cluster resumeAnnotations writes
// and resumeRequestOfAnnotations reads; locally writeResumeRequest writes and readResumeRequest reads. Every
// request a caller can make reads back as itself, and a later request without a grant clears the old grant.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QUOTED_VALUE_MAX } from '../../controller/api/bounds.ts';
import {
  parseResumeRequest,
  RESUME_EPISODES_ANNOTATION,
  resumeAnnotations,
  resumeRequestOfAnnotations,
} from '../../controller/api/resume.ts';
import type { NewResumeRequest } from '../../controller/api/resume.ts';
import { readResumeRequest, writeResumeRequest } from '../../controller/sources/local/resume-requests.ts';
import { tempDir } from '../support/local.ts';

const requests: Array<{ name: string; request: NewResumeRequest }> = [
  { name: 'a plain resume', request: { token: 'tok-1', by: 'user:alice' } },
  { name: 'a grant of five more episodes', request: { token: 'gitea-comment-77', by: 'user:gitea:bob', episodes: 5 } },
  { name: 'a console resume', request: { token: '0b4f6c1e-9d1f-4e43-8f8e-0a6f7f1d2c3b', by: 'carol via console' } },
];

/** What a JSON merge patch leaves in metadata.annotations: null removes a key. */
function merged(before: Record<string, string>, patch: Record<string, string | null>): Record<string, string> {
  const after = { ...before };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete after[key];
    else after[key] = value;
  }
  return after;
}

for (const { name, request } of requests) {
  test(`resume request, cluster: ${name} reads back as itself`, () => {
    assert.deepEqual(resumeRequestOfAnnotations(merged({ other: 'kept' }, resumeAnnotations(request))), request);
  });

  test(`resume request, local: ${name} reads back as itself`, () => {
    const path = writeResumeRequest(tempDir(), 'default', 'stuck', request);
    assert.deepEqual(readResumeRequest(path, assert.fail), request);
  });
}

test('resume request, cluster: a request without a grant removes the grant the one before left', () => {
  const first = merged({}, resumeAnnotations({ token: 't1', by: 'a', episodes: 3 }));
  assert.equal(first[RESUME_EPISODES_ANNOTATION], '3');
  const second = merged(first, resumeAnnotations({ token: 't2', by: 'b' }));
  assert.deepEqual(resumeRequestOfAnnotations(second), { token: 't2', by: 'b' });
});

test('resume request, cluster: no token is no request; a bad grant names its annotation', () => {
  assert.equal(resumeRequestOfAnnotations(undefined), undefined);
  assert.equal(resumeRequestOfAnnotations({ other: 'x' }), undefined);
  const bad = resumeRequestOfAnnotations({ 'episodic.dev/resume': 't', [RESUME_EPISODES_ANNOTATION]: 'many' });
  assert.match(bad?.error ?? '', /^annotation episodic\.dev\/resume-episodes: must be a whole number/);
  assert.equal(bad?.by, 'annotation', 'a bare `kubectl annotate` is by "annotation"');
});

test('a refused episodes value is quoted back cut to QUOTED_VALUE_MAX, with the mark when cut', () => {
  const where = { token: 'token', episodes: 'episodes', by: 'by' };
  const quoted = (episodes: unknown) =>
    parseResumeRequest({ token: 'tok', episodes }, where)?.error?.replace(/^.*, got /, '');
  assert.equal(quoted(-1), '-1');
  assert.equal(quoted('x'.repeat(QUOTED_VALUE_MAX - 2)), `"${'x'.repeat(QUOTED_VALUE_MAX - 2)}"`);
  assert.equal(quoted('x'.repeat(100)), `"${'x'.repeat(QUOTED_VALUE_MAX - 2)}…`);
});
