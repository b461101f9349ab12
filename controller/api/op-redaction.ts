// What of an agent's ops reaches status, episode records, Events and logs: names (a key, a child, a target)
// and why an op was refused, never a payload. A name is agent input too, so each such text is passed through
// redactOpText first: a value the task gives its agent (spec.agent.env) or a word that looks like a
// credential (sk-…, ghp_…, xoxb-…, glpat-…, AKIA…, AIza…, a JWT, 32+ hex digits) becomes [redacted].

export const REDACTED = '[redacted]';

/** Values shorter than this are too common to hide ("1", "true", a region name). */
const SECRET_MIN = 8;

const CREDENTIAL =
  /(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}|(?:gh[pousr]|github_pat)_[A-Za-z0-9_]{8,}|xox[abeprs]-[A-Za-z0-9-]{8,}|glpat-[A-Za-z0-9_-]{8,}|AKIA[0-9A-Z]{12,}|AIza[0-9A-Za-z_-]{20,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9._-]+|[A-Fa-f0-9]{32,}/g;

/** The literal env values of a task's agent: an op that echoes one must not publish it. */
export function agentSecrets(spec: { agent: { env: ReadonlyArray<{ value?: string }> } } | undefined): string[] {
  const values = (spec?.agent.env ?? []).map((e) => e.value ?? '').filter((v) => v.length >= SECRET_MIN);
  return [...new Set(values)].sort((a, b) => b.length - a.length); // longest first: one may contain another
}

/** `text` with every known secret and every credential-looking word replaced by [redacted]. */
export function redactOpText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join(REDACTED);
  return out.replace(CREDENTIAL, REDACTED);
}
