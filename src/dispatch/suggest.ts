/**
 * The key a user most likely meant by an unknown one (`shel` → `shell`), for batch-file errors.
 */

/** Edit distance of `a` and `b` (insertions, deletions, substitutions and swaps of neighbours each count 1). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.length][b.length];
}

/** The known key `key` most likely meant (at most 1 edit for short keys, 2 for keys of 5+ characters). */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  const most = key.length >= 5 ? 2 : 1;
  let best: { k: string; d: number } | undefined;
  for (const k of known) {
    const d = distance(key.toLowerCase(), k);
    if (d <= most && (best === undefined || d < best.d)) best = { k, d };
  }
  return best?.k;
}
