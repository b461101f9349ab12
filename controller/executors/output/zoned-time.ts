// Wall-clock arithmetic in IANA time zones with only Intl (no tz database dependency): the zone's offset
// at an instant is read back from Intl.DateTimeFormat, which also gets DST right.

export interface WallClock {
  year: number;
  /** 1-12 */
  month: number;
  /** May overflow (32 = next month's 1st): Date.UTC normalises it. */
  day: number;
  hour: number;
  minute: number;
}

const formatters = new Map<string, Intl.DateTimeFormat | null>();

function formatterFor(zone: string): Intl.DateTimeFormat | undefined {
  let formatter = formatters.get(zone);
  if (formatter === undefined) {
    try {
      formatter = new Intl.DateTimeFormat('en-US', {
        timeZone: zone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch {
      formatter = null; // RangeError: not a zone Intl knows
    }
    if (formatters.size > 100) formatters.clear(); // zone names come from agent output: keep the cache bounded
    formatters.set(zone, formatter);
  }
  return formatter ?? undefined;
}

export function isValidTimeZone(zone: string): boolean {
  return formatterFor(zone) !== undefined;
}

export function localTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone ?? 'UTC';
}

function partsAt(epochMs: number, formatter: Intl.DateTimeFormat): WallClock & { second: number } {
  const parts: Record<string, number> = {};
  for (const p of formatter.formatToParts(new Date(epochMs))) {
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  }
  return {
    year: parts.year,
    month: parts.month,
    day: parts.day,
    hour: parts.hour,
    minute: parts.minute,
    second: parts.second,
  };
}

/** The zone's UTC offset in ms at an instant (e.g. +3600000 for Berlin in winter). */
function offsetAt(epochMs: number, formatter: Intl.DateTimeFormat): number {
  const w = partsAt(epochMs, formatter);
  const wallAsUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return wallAsUtc - Math.floor(epochMs / 1000) * 1000;
}

export function wallClockAt(epochMs: number, zone: string): WallClock | undefined {
  const formatter = formatterFor(zone);
  return formatter ? partsAt(epochMs, formatter) : undefined;
}

/** The instant a wall-clock time occurs in a zone. Times skipped by a DST jump land just after it. */
export function wallClockToEpoch(wall: WallClock, zone: string): number | undefined {
  const formatter = formatterFor(zone);
  if (!formatter) return undefined;
  const asUtc = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute);
  // Two rounds: the offset at the first guess can differ from the offset at the answer near a DST switch.
  const first = asUtc - offsetAt(asUtc, formatter);
  const second = asUtc - offsetAt(first, formatter);
  return second;
}

/** A message printed just before the reset may be read just after it; don't push that a whole day out. */
const PAST_GRACE_MS = 5 * 60 * 1000;

/** The next occurrence (after now, minus a small grace) of hour:minute, optionally on [year-]month-day, in a zone. */
export function nextWallClockTime(
  now: Date,
  time: { hour: number; minute: number; month?: number; day?: number; year?: number },
  zone: string,
): Date | undefined {
  const today = wallClockAt(now.getTime(), zone);
  if (!today) return undefined;
  const candidates: WallClock[] = [];
  if (time.month !== undefined && time.day !== undefined) {
    // A stated year is taken as said; a date in the past is then no reset time at all.
    const years = time.year !== undefined ? [time.year] : [today.year, today.year + 1];
    for (const year of years) {
      candidates.push({ year, month: time.month, day: time.day, hour: time.hour, minute: time.minute });
    }
  } else {
    for (const add of [0, 1, 2]) {
      candidates.push({
        year: today.year,
        month: today.month,
        day: today.day + add,
        hour: time.hour,
        minute: time.minute,
      });
    }
  }
  for (const wall of candidates) {
    const epoch = wallClockToEpoch(wall, zone);
    if (epoch !== undefined && epoch > now.getTime() - PAST_GRACE_MS) return new Date(epoch);
  }
  return undefined;
}

/** The next midnight in a zone (e.g. when a per-day quota resets). */
export function nextMidnight(now: Date, zone: string): Date | undefined {
  const today = wallClockAt(now.getTime(), zone);
  if (!today) return undefined;
  const epoch = wallClockToEpoch(
    { year: today.year, month: today.month, day: today.day + 1, hour: 0, minute: 0 },
    zone,
  );
  return epoch === undefined ? undefined : new Date(epoch);
}
