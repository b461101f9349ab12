// The one way tests wait for something to become true: poll what can be observed, never sleep a fixed time.

type NotYet = undefined | null | false | 0 | '';

/**
 * Polls `probe` until it returns something truthy and resolves with that. A probe that throws counts as
 * "not yet" (a file half written, an object not created). On timeout the error names what was awaited and
 * what the probe said last.
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | NotYet | Promise<T | NotYet>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
      last = value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${describe(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function describe(value: unknown): string {
  if (value instanceof Error) return value.message;
  return JSON.stringify(value) ?? String(value);
}
