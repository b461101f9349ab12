// A suite's outer limit is a hang guard, not a budget: a slow, loaded machine must not fail a suite whose
// work is bounded by its own episodes and timeouts (issue 33). Only a real hang reaches it.
export const SUITE_HANG_GUARD_MS = 900_000;
