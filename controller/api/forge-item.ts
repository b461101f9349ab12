// The items and comments a trigger sees, the same shapes whether a poll (forge/gitea.ts, forge/github.ts)
// or a webhook (forge/webhook.ts) produced them: the reconciler's trigger rules and the forge clients share
// these, so they live below both.

export type ForgeKind = 'github' | 'gitea';

export interface ForgeItem {
  number: number;
  title: string;
  body: string;
  /** The item's web page. */
  url: string;
  author: string;
  authorIsBot: boolean;
  labels: string[];
  open: boolean;
  isPullRequest: boolean;
  /** RFC 3339, as the forge wrote it. */
  updatedAt: string;
  /** A pull request's own branch (webhooks carry it; issue lists do not). */
  headBranch?: string;
  /** OWNER/NAME of the repo holding a pull request's branch ('' once its fork is deleted); absent when not sent. */
  headRepo?: string;
  /** How many comments it has (issue lists carry it): a poll's fingerprint sees a comment within a second. */
  comments?: number;
}

export interface ForgeComment {
  id: number;
  /** The issue or pull request it belongs to. */
  itemNumber: number;
  author: string;
  authorIsBot: boolean;
  body: string;
  createdAt: string;
  updatedAt: string;
}

/** A commenter's role on the repo (undefined: none), or why it could not be read (the token's rights). */
export type PermissionAnswer = 'read' | 'triage' | 'write' | 'maintain' | 'admin' | undefined | { unknown: string };

/** How every report comment episodic writes begins (forge/types.ts reportMarker). */
export const REPORT_MARKER_PREFIX = '<!-- episodic:report ';

/** A comment episodic wrote (its body starts with the marker): never a command, whoever's token wrote it. */
export function isReportComment(body: string): boolean {
  return body.trimStart().startsWith(REPORT_MARKER_PREFIX);
}
