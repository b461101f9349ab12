// What of the controller's environment a local agent inherits (issue 28): everything but the variables a
// spec names as holding a secret (a trigger's tokenEnv, a webhook's secretEnv, any other *Env field), unless
// the task asks for one by name in spec.agent.env. The one home of that rule; pure (the caller reads the env).

/** Env-name fields of specs: each names a variable holding a secret (api/agent-trigger.ts). */
const SECRET_ENV_FIELD = /Env$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The variables the given specs name as secrets (*Env fields at any depth). */
export function secretEnvNames(specs: Iterable<unknown>): Set<string> {
  const names = new Set<string>();
  const walk = (node: unknown, depth: number): void => {
    if (node === null || typeof node !== 'object' || depth > 8) return;
    for (const [key, value] of Object.entries(node)) {
      if (typeof value === 'string' && SECRET_ENV_FIELD.test(key) && ENV_NAME.test(value)) names.add(value);
      else walk(value, depth + 1);
    }
  };
  for (const spec of specs) walk(spec, 0);
  return names;
}

/** The controller's environment as an agent gets it: the withheld names left out unless `asked` names them. */
export function agentBaseEnv(
  base: Readonly<Record<string, string | undefined>>,
  withheld: ReadonlySet<string>,
  asked: readonly string[],
): Record<string, string> {
  const wanted = new Set(asked);
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) {
    if (value !== undefined && (!withheld.has(name) || wanted.has(name))) env[name] = value;
  }
  return env;
}
