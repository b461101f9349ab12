// The one redaction rule, for every text that leaves the process: ops-made messages (status, records,
// Events), the runner's and the forge clients' errors, and log lines. Three things become [redacted]: a URL's
// userinfo, a known secret's literal value (a task's agent env value, a git token, a forge token) of
// SECRET_MIN characters or more, and a word that looks like a credential (sk-…, ghp_…, xoxb-…, glpat-…,
// AKIA…, AIza…, a JWT, 32+ hex digits).

export const REDACTED = '[redacted]';

/** Values shorter than this are too common to hide ("1", "true", a region name). */
export const SECRET_MIN = 8;

const CREDENTIAL =
  /(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}|(?:gh[pousr]|github_pat)_[A-Za-z0-9_]{8,}|xox[abeprs]-[A-Za-z0-9-]{8,}|glpat-[A-Za-z0-9_-]{8,}|AKIA[0-9A-Z]{12,}|AIza[0-9A-Za-z_-]{20,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9._-]+|[A-Fa-f0-9]{32,}/g;

/** scheme://user:password@host: the userinfo goes, the scheme and host stay. */
const URL_USERINFO = /([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi;

/** The literal env values of a task's agent: an op that echoes one must not publish it. */
export function agentSecrets(spec: { agent: { env: ReadonlyArray<{ value?: string }> } } | undefined): string[] {
  return hideable((spec?.agent.env ?? []).map((e) => e.value));
}

/** `text` with URL userinfo, every known secret and every credential-looking word replaced by [redacted]. */
export function redact(text: string, secrets: ReadonlyArray<string | undefined> = []): string {
  let out = text.replace(URL_USERINFO, `$1${REDACTED}@`);
  for (const secret of hideable(secrets)) out = out.split(secret).join(REDACTED);
  return out.replace(CREDENTIAL, REDACTED);
}

/** The secrets worth hiding, longest first: one may contain another. */
export function hideable(secrets: ReadonlyArray<string | undefined>): string[] {
  const long = secrets.filter((s): s is string => s !== undefined && s.length >= SECRET_MIN);
  return [...new Set(long)].sort((a, b) => b.length - a.length);
}
