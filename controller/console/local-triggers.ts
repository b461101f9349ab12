// The triggers' recorded status locally (STATE/triggers/NAMESPACE/NAME.json, sources/triggers/local-triggers.ts),
// read for the console's PR links. Read-only; an unreadable file is skipped.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { triggerStatusDir, triggerStatusPath } from '../util/state-layout.ts';

/** Every trigger's status as written, by "namespace/name" (parsed where it is used: pullRequestOf). */
export async function readTriggerStatuses(stateDir: string): Promise<Map<string, unknown>> {
  const root = triggerStatusDir(stateDir);
  const out = new Map<string, unknown>();
  for (const ns of await readdir(root).catch(() => [] as string[])) {
    for (const file of await readdir(join(root, ns)).catch(() => [] as string[])) {
      if (!file.endsWith('.json')) continue;
      try {
        out.set(`${ns}/${file.slice(0, -'.json'.length)}`, JSON.parse(await readFile(join(root, ns, file), 'utf8')));
      } catch {
        // mid-write or not ours
      }
    }
  }
  return out;
}

export async function readTriggerStatus(stateDir: string, key: string): Promise<unknown> {
  const [ns, name] = key.split('/');
  try {
    return JSON.parse(await readFile(triggerStatusPath(stateDir, ns as string, name as string), 'utf8'));
  } catch {
    return undefined;
  }
}
