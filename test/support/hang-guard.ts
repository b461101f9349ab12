// A suite's outer limit is a hang guard, not a budget: a slow, loaded machine must not fail a suite whose
// work is bounded by its own episodes and timeouts (issue 33). Only a real hang reaches it.
export const SUITE_HANG_GUARD_MS = 900_000;

/** One CLI command's outer limit in the local tests: far above any bounded run on a loaded machine. */
export const CLI_HANG_GUARD_MS = 300_000;

/** What a command killed by its hang guard says, so the failure reads as a hang and not as a missing file. */
export function hangGuardMessage(what: string, ms: number): string {
  return `[test] hang guard: ${what} was killed after ${ms} ms; its work is bounded, so this is a hang, not a slow machine`;
}
