// Resume requests locally: `episodic resume` writes STATE/resume/NAMESPACE/NAME.json atomically (temp
// file, rename); the controller watches the directory and hands each task's request to the loop, which
// handles a token once (status.resume.handledToken). The spec file is never touched.
import { readFileSync } from 'node:fs';
import { parseResumeRequest, resumeRefusal } from '../../api/resume.ts';
import type { NewResumeRequest, ResumeRequest } from '../../api/resume.ts';
import { StoredStatusSchema } from '../../sinks/local/file-status.ts';
import { StateFileWatch } from './state-file-watch.ts';
import type { StateFileWatchTiming } from './state-file-watch.ts';
import { resumeDir, resumeRequestPath, statusPath } from '../../util/state-layout.ts';
import { readStateFile, writeStateFile } from './state-file.ts';

/** Writes the request atomically: a reader sees the old file or the new one, never half of one. */
export function writeResumeRequest(
  stateDir: string,
  namespace: string,
  name: string,
  request: NewResumeRequest,
): string {
  return writeStateFile(resumeRequestPath(stateDir, namespace, name), {
    ...request,
    requestedAt: new Date().toISOString(),
  });
}

export type LocalResumeOutcome =
  | { ok: true; path: string; reason?: string }
  | { ok: false; missing: boolean; message: string };

/** What `episodic resume` and the console do locally: only a NeedsReview task on record gets a request. */
export function requestLocalResume(
  stateDir: string,
  namespace: string,
  name: string,
  request: NewResumeRequest,
): LocalResumeOutcome {
  let status: ReturnType<typeof StoredStatusSchema.parse>['status'] | undefined;
  try {
    status = StoredStatusSchema.parse(JSON.parse(readFileSync(statusPath(stateDir, namespace, name), 'utf8'))).status;
  } catch {
    status = undefined;
  }
  if (!status) return { ok: false, missing: true, message: `no task ${namespace}/${name} on record in ${stateDir}` };
  const { phase, reason } = status;
  const refused = resumeRefusal(`${namespace}/${name}`, phase, reason);
  if (refused) return { ok: false, missing: false, message: refused };
  return { ok: true, path: writeResumeRequest(stateDir, namespace, name, request), reason };
}

/** Reads one request file; a file that is not a request is reported by `onError` and yields nothing. */
export function readResumeRequest(path: string, onError: (message: string) => void): ResumeRequest | undefined {
  const raw = readStateFile(path, 'resume request', onError);
  if (raw === undefined) return undefined;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    onError(`${path}: not a resume request: expected a JSON object`);
    return undefined;
  }
  const r = raw as Record<string, unknown>;
  return parseResumeRequest(r, { token: `${path}: token`, episodes: `${path}: episodes`, by: `${path}: by` });
}

/** Follows the request directory (state-file-watch.ts): `onChange` gets a task key and its request. */
export class ResumeRequestWatch extends StateFileWatch<ResumeRequest> {
  constructor(
    stateDir: string,
    onChange: (key: string, request: ResumeRequest | undefined) => void,
    onError: (message: string) => void,
    timing?: StateFileWatchTiming,
  ) {
    super(resumeDir(stateDir), readResumeRequest, onChange, onError, timing);
  }
}
