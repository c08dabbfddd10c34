/**
 * table(): rows of text cells as aligned columns — every column padded to its widest cell, two
 * spaces between columns, no trailing spaces. The one table layout of `berth status` and the
 * `berth dispatch` summary.
 */

/** `rows` (the first is usually the header) as lines joined by '\n'; rows shorter than the first get empty cells. */
export function table(rows: readonly (readonly string[])[]): string {
  if (rows.length === 0) return '';
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const cell = (r: readonly string[], c: number) =>
    c === widths.length - 1 ? (r[c] ?? '') : (r[c] ?? '').padEnd(widths[c]);
  return rows
    .map((r) =>
      widths
        .map((_, c) => cell(r, c))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
