/**
 * Text from the server printed on a terminal (issue 10 item 9): node names, run ids, labels and
 * reasons come from other clients and workers, so control characters are shown escaped, never
 * sent raw (an ESC could clear the screen or forge lines).
 */

/** C0 controls, DEL, C1 controls, and the Unicode line/paragraph separators and bidi overrides. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `s` with every control character written as `\xHH` or `\uHHHH`, e.g. ESC → `\x1b`. */
export function printable(s: string): string {
  return s.replace(CONTROL, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** A copy of `v` with every string in it made printable (objects and arrays walked; other values kept). */
export function printableDeep<T>(v: T): T {
  if (typeof v === 'string') return printable(v) as T;
  if (Array.isArray(v)) return v.map(printableDeep) as T;
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, printableDeep(x)])) as T;
  }
  return v;
}
