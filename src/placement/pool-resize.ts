/**
 * Resizing a cluster-wide pool (issue 23 item 1; a config reload of `pools`). Growing wakes the waiters asking the
 * pool (SPEC P12); shrinking below what is held revokes no claim, it only blocks new grants until enough is given
 * back (SPEC P8: nothing held is taken away); a waiter asking more than the new total can never be served and fails
 * FAILED_PRECONDITION naming the pool, as a new claim for it would.
 */
import { BerthError } from '../errors.js';
import { fromUnits } from '../resources/quantity.js';
import { wakePools } from './pool-fit.js';
import type { Settler } from './settle.js';
import type { PlacerState } from './state.js';

/**
 * Pool `name` now holds `units` (units of 1e-4). @throws BerthError INVALID_ARGUMENT naming `pools.<name>` for a
 * name that is not a pool or a total that is not a whole number of units ≥ 0; nothing changes then.
 */
export function resizePool(s: PlacerState, settler: Settler, name: string, units: number): void {
  if (!s.pools.has(name))
    throw new BerthError('invalid_argument', `pools.${name}: not a pool (pools are named in the config)`);
  if (!Number.isSafeInteger(units) || units < 0)
    throw new BerthError('invalid_argument', `pools.${name}: a total of ${units} units is not a whole number ≥ 0`);
  const old = s.pools.total[name];
  s.pools.resize(name, units);
  s.sharesAt = -1; // the pool's total is a denominator of the tenants' shares (SPEC Q1)
  if (units < old) {
    const never = [...s.queue.waiters()].filter((w) => (w.ask.pools?.[name] ?? 0) > units);
    for (const w of never)
      settler.abandon(
        w,
        new BerthError(
          'failed_precondition',
          `ask.resources.${name}: asked ${fromUnits(w.ask.pools?.[name] ?? 0)} but pool ${name} now holds ` +
            `${fromUnits(units)}`,
        ),
      );
  } else if (units > old) wakePools(s, [name]);
  settler.settle();
}
