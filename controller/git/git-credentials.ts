// Git credentials of an episode pod. They come from the task's git secret (spec.workspace.git.secretRef,
// mounted with envFrom), are taken out of the environment before the agent starts (the agent never sees
// them), reach git only through a credential helper that reads them from git's own environment (never
// argv, never a URL on disk), and are scrubbed from every message we print or report.

/** Environment keys the runner reads, first match wins: our own names, then kubernetes.io/basic-auth keys. */
export const TOKEN_KEYS = ['GIT_TOKEN', 'GIT_PASSWORD', 'password'] as const;
export const USERNAME_KEYS = ['GIT_USERNAME', 'username'] as const;
/** Accepted by GitHub for tokens; GitLab and Gitea accept any non-empty username with a token. */
export const DEFAULT_GIT_USERNAME = 'x-access-token';

export interface GitCredentials {
  username: string;
  token: string;
}

/** Read the credentials and delete every credential key from `env` (normally process.env). */
export function takeGitCredentials(env: NodeJS.ProcessEnv): GitCredentials | undefined {
  const pick = (keys: readonly string[]) => keys.map((k) => env[k]).find((v) => v !== undefined && v !== '');
  const token = pick(TOKEN_KEYS);
  const username = pick(USERNAME_KEYS);
  for (const key of [...TOKEN_KEYS, ...USERNAME_KEYS]) delete env[key];
  return token === undefined ? undefined : { username: username ?? DEFAULT_GIT_USERNAME, token };
}

// The helper is a shell function git runs for `credential get`; the values stay in variables.
const HELPER =
  '!f() { test "$1" = get || exit 0; echo "username=$EPISODIC_GIT_USERNAME"; echo "password=$EPISODIC_GIT_TOKEN"; }; f';

/** Environment for every git command the runner runs. */
export function gitEnvironment(credentials: GitCredentials | undefined): Record<string, string> {
  const config: Array<[string, string]> = [
    // The workspace may be a volume created by another uid; it is ours to use.
    ['safe.directory', '*'],
    // Hooks and signing are the agent's business, not the runner's: an agent-written hook must not run
    // with the runner's credentials.
    ['core.hooksPath', '/dev/null'],
    ['commit.gpgSign', 'false'],
  ];
  if (credentials) config.push(['credential.helper', ''], ['credential.helper', HELPER]);
  const env: Record<string, string> = {
    GIT_TERMINAL_PROMPT: '0', // fail instead of waiting for a password nobody will type
    GIT_CONFIG_COUNT: String(config.length),
  };
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  if (credentials) {
    env.EPISODIC_GIT_USERNAME = credentials.username;
    env.EPISODIC_GIT_TOKEN = credentials.token;
  }
  return env;
}

/** Remove userinfo from URLs and any literal credential value from free text. */
export function redactCredentials(text: string, credentials?: GitCredentials): string {
  let out = text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, '$1***@');
  if (credentials && credentials.token.length >= 4) out = out.split(credentials.token).join('***');
  return out;
}
