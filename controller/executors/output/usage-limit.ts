// Subscription/usage limits: recognising the message and turning its reset clause into an instant.
// Forms seen in the wild: "You've hit your limit · resets 3pm (Europe/Berlin)", "5-hour limit reached ∙
// resets 2am", "Your limit will reset at 7pm (America/New_York)", "Claude AI usage limit reached|1735689600",
// "try again in 2 hours 5 minutes", "quota will reset after 2h3m14s", "resets Oct 6, 1pm", and from the real
// CLIs: "You've hit your 5-hour limit · resets 7:13am (UTC)", "You've hit your weekly limit · resets Nov 26,
// 5:13am (UTC)" (Claude Code, subscribers), "You’ve hit your usage limit. … try again at 7:13 AM." and "…
// try again at Nov 26th, 2026 5:13 AM." (Codex: local time, no zone), "You have exhausted your daily quota on
// this model." (Gemini CLI).
import { isValidTimeZone, localTimeZone, nextWallClockTime } from './zoned-time.ts';

const USAGE_LIMIT_PATTERNS: RegExp[] = [
  /usage[ _-]limit/i,
  // "hit your limit", "hit your 5-hour limit", "hit your weekly limit", "hit your monthly spend limit".
  /\bhit your (?:[\w-]+ ){0,2}limit\b/i,
  /\b(?:5-hour|five-hour|session|weekly|daily|monthly|opus|sonnet)\s+limit\s+(?:reached|exceeded)\b/i,
  /\blimit reached\b[^\n]{0,40}\bresets?\b/i,
  /\bexhausted your (?:daily |monthly )?(?:quota|capacity)\b/i,
  /\bquota will reset\b/i,
  /\bout of (?:extra )?usage\b/i,
];

export interface UsageLimitMatch {
  /** Offset of the line holding the match, where the search for a reset clause starts. */
  lineStart: number;
  line: string;
}

export function findUsageLimit(text: string): UsageLimitMatch | undefined {
  let best: number | undefined;
  for (const pattern of USAGE_LIMIT_PATTERNS) {
    const m = pattern.exec(text);
    if (m && (best === undefined || m.index < best)) best = m.index;
  }
  if (best === undefined) return undefined;
  const lineStart = text.lastIndexOf('\n', best) + 1;
  const lineEnd = text.indexOf('\n', best);
  return { lineStart, line: text.slice(lineStart, lineEnd === -1 ? undefined : lineEnd) };
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

const EPOCH = /limit[^|\n]{0,60}\|\s*(\d{13}|\d{10})\b/i;
const ISO = /(\d{4}-\d{2}-\d{2})(?:T|\s+(?:at\s+)?)(\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)\s*(Z|UTC|GMT|[+-]\d{2}:?\d{2})/i;
const CLOCK = new RegExp(
  String.raw`\b(?:resets?|reset\s+at|try\s+again\s+at|available\s+again\s+at)\s+(?:at\s+|on\s+)?` +
    String.raw`(?:(${MONTHS.join('|')})[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(?:(\d{4}),?\s+)?(?:at\s+)?)?` +
    String.raw`(\d{1,2})(?::(\d{2}))?(?:\s*([ap])\.?m\.?(?![a-z]))?` +
    String.raw`(?:\s*\(([A-Za-z][\w+-]*(?:\/[\w+-]+)*)\)|\s+(UTC|GMT)\b)?`,
  'gi',
);
const RELATIVE =
  /\b(?:resets?|reset|try\s+again|retry|available\s+again)\s+(?:in|after)\s+((?:\d+(?:\.\d+)?\s*(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)(?![a-z])[\s,]*(?:and\s+)?)+)/i;
const DURATION_PART = /(\d+(?:\.\d+)?)\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)(?![a-z])/gi;

function unitMs(unit: string): number {
  const u = unit.toLowerCase();
  if (u.startsWith('d')) return 86_400_000;
  if (u.startsWith('h')) return 3_600_000;
  if (u.startsWith('m')) return 60_000;
  return 1000;
}

function fromEpoch(text: string): Date | undefined {
  const m = EPOCH.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]);
  return new Date(m[1].length === 13 ? n : n * 1000);
}

function fromIso(text: string): Date | undefined {
  const m = ISO.exec(text);
  if (!m) return undefined;
  const zone = /^(Z|UTC|GMT)$/i.test(m[3]) ? 'Z' : m[3];
  const ms = Date.parse(`${m[1]}T${m[2]}${zone}`);
  return Number.isNaN(ms) ? undefined : new Date(ms);
}

function fromRelative(text: string, now: Date): Date | undefined {
  const m = RELATIVE.exec(text);
  if (!m) return undefined;
  let total = 0;
  for (const part of m[1].matchAll(DURATION_PART)) total += Number(part[1]) * unitMs(part[2]);
  return total > 0 ? new Date(now.getTime() + total) : undefined;
}

function fromClock(text: string, now: Date, defaultZone: string): Date | undefined {
  for (const m of text.matchAll(CLOCK)) {
    const [, monthName, dayText, yearText, hourText, minuteText, meridiem, zoneName, utcWord] = m;
    // "resets 3" is not a time: require am/pm or hh:mm.
    if (meridiem === undefined && minuteText === undefined) continue;
    let hour = Number(hourText);
    const minute = minuteText === undefined ? 0 : Number(minuteText);
    if (minute > 59) continue;
    if (meridiem !== undefined) {
      if (hour < 1 || hour > 12) continue;
      hour = (hour % 12) + (meridiem.toLowerCase() === 'p' ? 12 : 0);
    } else if (hour > 23) {
      continue;
    }
    const zone = zoneName ?? utcWord ?? defaultZone;
    // An unknown zone would make the hour meaningless: better no resetAt than a wrong one.
    if (!isValidTimeZone(zone)) return undefined;
    const month = monthName ? MONTHS.indexOf(monthName.toLowerCase().slice(0, 3)) + 1 : undefined;
    const day = dayText ? Number(dayText) : undefined;
    const year = yearText ? Number(yearText) : undefined;
    return nextWallClockTime(now, { hour, minute, month, day, year }, zone);
  }
  return undefined;
}

/**
 * When a usage limit lifts, as RFC 3339 UTC; undefined if the text names no parseable time. A wall-clock
 * time without a zone ("try again at 7:13 AM") is read in `zone`: the zone the agent printed it in, which is
 * its own TZ (default: this process's zone).
 */
export function parseResetAt(text: string, now: Date, zone: string = localTimeZone()): string | undefined {
  const at = fromEpoch(text) ?? fromIso(text) ?? fromRelative(text, now) ?? fromClock(text, now, zone);
  return at && !Number.isNaN(at.getTime()) ? at.toISOString() : undefined;
}
