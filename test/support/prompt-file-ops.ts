// One promptFile naming the three agent-ops placeholders, for the local and the cluster end-to-end tests: both
// modes must render it alike (a blackboard key `plan`, a child `lead-a` that succeeded, a message from bob).
export const OPS_PROMPT_FILE = 'Plan: {{bb.plan}}\nChildren:\n{{children}}\nInbox:\n{{messages}}\n';

/** What an episode of `lead` sees once lead-a ended and bob's "hello lead" arrived. */
export const OPS_PROMPT_RENDERED =
  /^Plan: v1\nChildren:\n- lead-a: Succeeded\n {2}last message: [^\n]+\nInbox:\nfrom bob at \S+:\nhello lead\n$/;
