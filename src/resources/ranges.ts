/**
 * Device range strings (SPEC D4): `0,2-4,7` ⇄ [0, 2, 3, 4, 7].
 * Used for `--gpus`, `--devices`, `{devices}` and CUDA_VISIBLE_DEVICES.
 */

/** Raised for a malformed range spec; the message names the spec and the bad part. */
export class RangeSpecError extends Error {
  constructor(
    readonly spec: string,
    detail: string,
  ) {
    super(`invalid device range '${spec}': ${detail}`);
    this.name = 'RangeSpecError';
  }
}

const ID = /^\d+$/;
/** Largest device index accepted (keeps specs like `0-999999999` from allocating huge arrays). */
export const MAX_DEVICE_ID = 65535;
/** Most device ids one machine may have (`--gpus`, `--devices`, a worker's Hello). */
export const MAX_DEVICES = 4096;

/**
 * Parses a range spec into sorted, unique device ids.
 * `''` → []; `0-3` → [0,1,2,3]; ` 1 , 3 ` → [1,3]; `3,1,1` → [1,3].
 * @throws RangeSpecError for `3-1`, `a`, `-1`, `1-`, `1-2-3` and ids above MAX_DEVICE_ID.
 */
export function parseRange(spec: string): number[] {
  const ids = new Set<number>();
  if (spec.trim() === '') return [];
  for (const raw of spec.split(',')) {
    const part = raw.trim();
    if (part === '') throw new RangeSpecError(spec, 'empty element');
    const bounds = part.split('-').map((s) => s.trim());
    if (bounds.length > 2 || !bounds.every((b) => ID.test(b))) {
      throw new RangeSpecError(spec, `'${part}' is not an id or a range a-b of ids`);
    }
    const lo = Number(bounds[0]);
    const hi = Number(bounds[bounds.length - 1]);
    if (hi > MAX_DEVICE_ID) throw new RangeSpecError(spec, `id ${hi} is above ${MAX_DEVICE_ID}`);
    if (lo > hi) throw new RangeSpecError(spec, `range '${part}' runs backwards`);
    for (let id = lo; id <= hi; id++) ids.add(id);
  }
  return [...ids].sort((a, b) => a - b);
}

/**
 * Formats device ids as the shortest range spec: [0,1,2,3] → `0-3`; [0,2,5] → `0,2,5`;
 * [0,1,3] → `0,1,3` (runs of two stay listed); [] → ``. Input order and duplicates do not matter.
 */
export function formatRange(ids: Iterable<number>): string {
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    if (j - i >= 2) parts.push(`${sorted[i]}-${sorted[j]}`);
    else for (let k = i; k <= j; k++) parts.push(String(sorted[k]));
    i = j + 1;
  }
  return parts.join(',');
}

/**
 * The first id a spec names twice (`0,0` → 0, `0-3,2` → 2), or undefined when each id appears
 * once. Malformed parts are skipped: parseRange names them.
 */
export function repeatedId(spec: string): number | undefined {
  const seen = new Set<number>();
  for (const part of spec.split(',')) {
    if (part.trim() === '') continue;
    let ids: number[];
    try {
      ids = parseRange(part);
    } catch {
      continue;
    }
    for (const id of ids) {
      if (seen.has(id)) return id;
      seen.add(id);
    }
  }
  return undefined;
}
