// One controller per state directory. The lock file holds the owner's pid; a lock whose owner is dead
// (kill -9) is stale and taken over, so a crash never needs manual cleanup.
import { readFileSync } from 'node:fs';
import { mkdir, readFile, unlink } from 'node:fs/promises';
import { createFileOnce } from './atomic-write.ts';
import { lockPath } from './state-layout.ts';

export class StateLockError extends Error {}

export interface StateLock {
  path: string;
  release(): Promise<void>;
}

export async function acquireStateLock(stateDir: string): Promise<StateLock> {
  await mkdir(stateDir, { recursive: true });
  const path = lockPath(stateDir);
  for (let attempt = 0; attempt < 3; attempt++) {
    // The pid is written to a private file first and linked into place: the lock never exists without its
    // owner, so a second controller starting at the same instant cannot take an empty lock for a stale one.
    if (createFileOnce(path, `${process.pid}\n`) === 'created') {
      return {
        path,
        release: async () => {
          if ((await ownerOf(path)) === process.pid) await unlink(path).catch(() => undefined);
        },
      };
    }
    const owner = await ownerOf(path);
    if (owner !== undefined && owner !== process.pid && isAlive(owner)) {
      throw new StateLockError(`state directory ${stateDir} is in use by another episodic controller (pid ${owner})`);
    }
    await unlink(path).catch(() => undefined); // stale: its owner is gone
  }
  throw new StateLockError(`could not lock ${path}`);
}

/** The pid of the live controller holding this state dir's lock, or undefined when none runs on it. */
export function lockHolder(stateDir: string): number | undefined {
  let text = '';
  try {
    text = readFileSync(lockPath(stateDir), 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number.parseInt(text.trim(), 10);
  return Number.isFinite(pid) && pid > 0 && isAlive(pid) ? pid : undefined;
}

async function ownerOf(path: string): Promise<number | undefined> {
  const text = await readFile(path, 'utf8').catch(() => '');
  const pid = Number.parseInt(text.trim(), 10);
  return Number.isFinite(pid) && pid > 0 ? pid : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
