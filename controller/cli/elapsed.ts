// How long something took or has been going, as every CLI table shows it (live table, `get`, triggers).

/** `42s`, `1m05s`, `2h03m`, `30d01h`: to the second, two units at most. */
export function formatElapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86_400)}d${String(Math.floor((s % 86_400) / 3600)).padStart(2, '0')}h`;
}

/** The time between two RFC 3339 stamps (formatDuration), or '' when either is missing or unreadable. */
export function durationBetween(start: string | undefined, end: string | undefined): string {
  const ms = Date.parse(end ?? '') - Date.parse(start ?? '');
  return Number.isNaN(ms) ? '' : formatDuration(ms);
}

/** An episode's length: tenths of a second under ten seconds ("0.4s", "9.9s"), then as formatElapsed. */
export function formatDuration(ms: number): string {
  return ms < 9950 ? `${(Math.max(0, ms) / 1000).toFixed(1)}s` : formatElapsed(ms);
}
