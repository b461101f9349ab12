// "Is this a git workspace" asked one way everywhere: a spec's workspace is a directory (a string), a volume
// claim, or { git: {url, ref, from?, secretRef?} }. Generic so agent-task.ts, which defines the schema, can use it.

/** The `git` member of whichever workspace type `W` is (the parsed spec's, a template's). */
export type GitOf<W> = Extract<NonNullable<W>, { git: unknown }>['git'];

/** A workspace's git source ({url, ref, …}); undefined for a directory, a volume claim or no workspace. */
export function gitWorkspaceOf<W>(workspace: W): GitOf<W> | undefined {
  if (!workspace || typeof workspace !== 'object' || !('git' in workspace)) return undefined;
  return workspace.git as GitOf<W>;
}
