// Option parsing helpers: every bad value gets a message naming the flag.
export class UsageError extends Error {}

export function parseNumberOption(flag: string, raw: string, rules: { integer?: boolean; min?: number } = {}): number {
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value)) throw new UsageError(`${flag}: "${raw}" is not a number`);
  if (rules.integer && !Number.isInteger(value)) throw new UsageError(`${flag}: "${raw}" is not a whole number`);
  if (rules.min !== undefined && value < rules.min) throw new UsageError(`${flag}: must be at least ${rules.min}`);
  return value;
}
