// Locally, an AgentCredentials' status (its credentials' pauses, totals and last errors; never a value) is a
// file under the state directory, so a pause outlives the controller: after a restart no episode starts into
// a usage limit that is known already.
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { AgentCredentialsStatusSchema } from '../../api/agent-credentials.ts';
import type { CredentialState } from '../../gateway/credential-pool.ts';
import { writeFileAtomicSync } from '../../util/atomic-write.ts';
import { credentialsStatusPath } from '../../util/state-layout.ts';

export class LocalCredentialsStatus {
  private readonly stateDir: string;
  private readonly log: Logger;

  constructor(stateDir: string, log: Logger) {
    this.stateDir = stateDir;
    this.log = log;
  }

  /** What was kept; nothing when there is no file, and nothing (said in the log) when it is unreadable. */
  read(namespace: string, name: string): CredentialState[] {
    const path = credentialsStatusPath(this.stateDir, namespace, name);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.log.error({ path, err }, 'credentials status unreadable');
      return [];
    }
    try {
      const parsed = AgentCredentialsStatusSchema.safeParse(JSON.parse(text));
      if (parsed.success) return parsed.data.credentials;
      this.log.error({ path, error: parsed.error.issues[0]?.message }, `${path}: status.credentials: invalid; ignored`);
    } catch {
      this.log.error({ path }, `${path}: not JSON; ignored`);
    }
    return [];
  }

  write(namespace: string, name: string, credentials: readonly CredentialState[], now: Date): void {
    const path = credentialsStatusPath(this.stateDir, namespace, name);
    const status = { credentials, updatedAt: now.toISOString() };
    try {
      writeFileAtomicSync(path, `${JSON.stringify(status, null, 2)}\n`, { flush: true });
    } catch (err) {
      this.log.error({ path, err: (err as Error).message }, 'could not write the credentials status');
    }
  }
}
