/**
 * Fixed-point quantities of named resources (issue 23 item 1): a named per-machine resource (`trainer`, `nic`) or
 * a cluster-wide pool (`license/matlab`) is counted in units of 1e-4, as integers, so the books never add floats
 * (Ray's granularity: 4 × 0.25 always fills 1). Users give and see plain numbers; the books see units.
 */
import * as z from 'zod';

/** Units in one: quantities are kept as integers of 1e-4. */
export const UNIT = 10_000;
/** Largest quantity of one named resource, in plain numbers (units fit a double exactly far beyond). */
export const MAX_QUANTITY = 1e9;
/** What a resource or pool name may hold: letters, digits and _ . - / (e.g. `license/matlab`), 1–63 characters. */
export const RESOURCE_NAME = /^[A-Za-z0-9_.\-/]{1,63}$/;

/** Named quantities in units, by name. */
export type Named = Record<string, number>;

/**
 * `v` (a plain number) in units, or undefined when it is not a finite number in [0, MAX_QUANTITY] or is finer than
 * 1e-4 (`0.00005`). Tolerates the binary error of decimals (`0.1` is 1000 units).
 */
export function toUnits(v: number): number | undefined {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > MAX_QUANTITY) return undefined;
  const u = Math.round(v * UNIT);
  return Math.abs(u - v * UNIT) < 1e-6 * Math.max(1, u) ? u : undefined;
}

/** Units as a plain number (`2500` → 0.25). */
export function fromUnits(u: number): number {
  return u / UNIT;
}

/** Every quantity of `named` (units) as plain numbers, for the wire and the snapshot. */
export function namedPlain(named: Named | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  if (named) for (const k in named) out[k] = fromUnits(named[k]);
  return out;
}

/**
 * Plain `m` as units, or the first bad entry: `{ bad: name, why }` for a name outside RESOURCE_NAME or a quantity
 * `toUnits` refuses. Zero quantities are dropped. Undefined in, undefined out; an empty result is undefined.
 */
export function namedUnits(m: Record<string, number> | undefined): Named | { bad: string; why: string } | undefined {
  if (!m) return undefined;
  let out: Named | undefined;
  for (const k of Object.keys(m)) {
    if (!RESOURCE_NAME.test(k)) return { bad: k, why: NAME_RULE };
    const u = toUnits(m[k]);
    if (u === undefined) return { bad: k, why: `${QUANTITY_RULE} (got ${JSON.stringify(m[k])})` };
    if (u > 0) (out ??= {})[k] = u;
  }
  return out;
}

/** True when `x` is a `namedUnits` error. */
export function isBadNamed(x: Named | { bad: string; why: string } | undefined): x is { bad: string; why: string } {
  return x !== undefined && typeof (x as { bad?: unknown }).bad === 'string' && typeof x.why === 'string';
}

/** `trainer 1, nic 0.5` — named quantities for people. '' when none. */
export function describeNamed(named: Named | undefined): string {
  if (!named) return '';
  return Object.keys(named)
    .sort()
    .map((k) => `${fromUnits(named[k])} ${k}`)
    .join(', ');
}

/** The error for a quantity `toUnits` refuses. */
export const QUANTITY_RULE = `a number from 0 to ${MAX_QUANTITY} in steps of 0.0001`;
/** The error for a name outside RESOURCE_NAME. */
export const NAME_RULE = 'a resource name holds 1–63 letters, digits and _ . - / (e.g. license/matlab)';

/**
 * The zod schema of named quantities as users and the wire give them (`{"trainer": 1}`): names per RESOURCE_NAME,
 * quantities per `toUnits`; parses to units with zeros dropped. Errors name the key (`resources.<name>`).
 */
export const namedSchema = z
  .record(
    z.string().regex(RESOURCE_NAME, NAME_RULE),
    z.number().refine((v) => toUnits(v) !== undefined, QUANTITY_RULE),
  )
  .refine((r) => Object.keys(r).length <= 64, 'at most 64 named resources')
  .transform((r) => {
    const out: Named = {};
    for (const k in r) {
      const u = toUnits(r[k]) ?? 0;
      if (u > 0) out[k] = u;
    }
    return out;
  });
