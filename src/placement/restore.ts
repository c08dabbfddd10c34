/**
 * Restoring the books after a restart (SPEC S4, S6; issue 19 items 4 and 7). A claim read back from
 * the journal takes exactly the resources it held — the same cores, device ids and memory — or
 * fails, so nothing is granted twice across a restart. A machine the journal knows stays in the
 * books while its restart hold runs: never chosen for a new grant, but it counts for clamping and
 * labels, so an ask waits for it rather than being cut down below it or failing (S6).
 */
import { BerthError } from '../errors.js';
import { BooksError, type Amount } from '../resources/books.js';
import { eligible } from './choose.js';
import { Lease } from './lease.js';
import type { MachineEntry, MachineSet } from './machines.js';
import type { AllocationGrant, NormalizedAsk } from './types.js';

/** A claim as the journal kept it: what `Placer.restoreClaim` takes back. */
export interface RestoredClaim {
  claimId: string;
  machine: string;
  allocation: AllocationGrant;
  ask: NormalizedAsk;
  clamped?: boolean;
  fellBack?: boolean;
}

/**
 * Takes exactly `c.allocation` on machine `c.machine` and returns its lease.
 * @throws BerthError FAILED_PRECONDITION "claim <id> cannot be restored: …" when the machine is not in
 *   the books or those resources are not free (held by another claim, or not on the machine any more).
 */
export function restoreLease(machines: MachineSet, c: RestoredClaim): { lease: Lease; entry: MachineEntry } {
  const entry = machines.get(c.machine);
  if (!entry)
    throw new BerthError('failed_precondition', `claim ${c.claimId} cannot be restored: no machine ${c.machine}`);
  const a = c.allocation;
  try {
    machines.takeExact(entry, c.claimId, { cpus: a.cpus, gpuIds: a.gpuIds, ramMb: a.ramMb });
  } catch (err) {
    if (!(err instanceof BooksError)) throw err;
    throw new BerthError(
      'failed_precondition',
      `claim ${c.claimId} cannot be restored on ${c.machine}: ${err.message}`,
    );
  }
  const allocation = { cpus: a.cpus, gpuIds: [...a.gpuIds].sort((x, y) => x - y), ramMb: a.ramMb, env: { ...a.env } };
  const lease = new Lease(
    c.claimId,
    entry.spec.name,
    entry.spec.remote,
    allocation,
    c.clamped ?? false,
    c.fellBack ?? false,
    c.ask,
  );
  return { lease, entry };
}

/**
 * The Queued detail's tail for an ask that waits for restored machines (S6): `waiting for <names> to come
 * back (restart hold, N s left)` when only machines still held after the restart could hold it; '' otherwise.
 */
export function comingBackDetail(
  held: ReadonlyMap<MachineEntry, number>,
  machines: MachineSet,
  ask: NormalizedAsk,
  amount: Amount,
): string {
  if (held.size === 0) return '';
  const could = (m: MachineEntry) => eligible(m, ask) && m.books.canEverHold(amount);
  for (const m of machines.all()) if (!held.has(m) && could(m)) return '';
  const back = [...held].filter(([m]) => could(m));
  if (back.length === 0) return '';
  const until = Math.max(...back.map(([, u]) => u));
  const names = back.map(([m]) => m.spec.name);
  const shown = names.length > 3 ? `${names.slice(0, 3).join(', ')} and ${names.length - 3} more` : names.join(', ');
  return `: waiting for ${shown} to come back (restart hold, ${Math.max(0, Math.ceil((until - Date.now()) / 1000))} s left)`;
}
