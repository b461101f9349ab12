// The console over a local state dir, for `episodic console` and `episodic run --console`.
import { userInfo } from 'node:os';
import { LocalConsoleSource } from './local-source.ts';
import { TOKEN_ENV } from './security.ts';
import { startConsole } from './server.ts';
import type { RunningConsole } from './server.ts';

export interface RunningLocalConsole extends RunningConsole {
  /** `run --console`: show the controller's own statuses from now on (LocalConsoleSource.follow). */
  follow: LocalConsoleSource['follow'];
}

export async function startLocalConsole(opts: {
  dir: string;
  stateDir: string;
  listen: string;
  /** Where `run --hooks-addr` serves hooks ("http://host:port"), for the Triggers page. */
  hooksBase?: string;
}): Promise<RunningLocalConsole> {
  const source = new LocalConsoleSource(opts.dir, opts.stateDir, opts.hooksBase);
  await source.start();
  const token = process.env[TOKEN_ENV] || undefined;
  try {
    const running = await startConsole({ listen: opts.listen, source, token, who: consoleUser(token !== undefined) });
    return {
      ...running,
      follow: (view, changed, hooksUrl) => source.follow(view, changed, hooksUrl),
      close: async () => {
        await running.close();
        await source.close();
      },
    };
  } catch (err) {
    await source.close();
    throw err;
  }
}

/** Who the audit trail names: the user running the console, or whoever holds its token. */
export function consoleUser(withToken: boolean): string {
  if (withToken) return 'console token holder';
  try {
    return `${userInfo().username || 'unknown'} via console`;
  } catch {
    return `${process.env.USER ?? 'unknown'} via console`;
  }
}
