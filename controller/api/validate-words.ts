// The known word a typo most likely meant, for "did you mean" hints (unknown fields, step names, output keys).

/** The known key a typo most likely meant, if any is close enough. */
export function closest(key: string, known: string[]): string | undefined {
  let best: { key: string; d: number } | undefined;
  for (const k of known) {
    const [a, b] = [key.toLowerCase(), k.toLowerCase()];
    // Same letters in another case, a shortened name ("noProgress"), or a couple of typed-wrong letters.
    const d = a === b ? 0 : a.length >= 4 && (b.startsWith(a) || a.startsWith(b)) ? 1 : editDistance(a, b);
    if (d <= Math.max(2, Math.floor(k.length / 4)) && (!best || d < best.d)) best = { key: k, d };
  }
  return best?.key;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const next = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = row[j];
      row[j] = next;
    }
  }
  return row[b.length];
}
