/**
 * Restoring the books after a restart (SPEC S4, S6; issue 19 items 4 and 7). A claim read back from
 * the journal takes exactly the resources it held — the same cores, device ids, memory and named ones — or
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
  /** When it was granted (ms since the epoch): how long it has been held counts from then, across restarts. */
  at?: number;
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
  let res: Record<string, number> | undefined;
  for (const k in a.resources ?? {}) if (!c.ask.pools?.[k]) (res ??= {})[k] = a.resources?.[k] ?? 0; // pools apart
  try {
    machines.takeExact(entry, c.claimId, { cpus: a.cpus, gpuIds: a.gpuIds, ramMb: a.ramMb, res, share: a.gpuShare });
  } catch (err) {
    if (!(err instanceof BooksError)) throw err;
    throw new BerthError(
      'failed_precondition',
      `claim ${c.claimId} cannot be restored on ${c.machine}: ${err.message}`,
    );
  }
  const allocation: AllocationGrant = {
    cpus: a.cpus,
    gpuIds: [...a.gpuIds].sort((x, y) => x - y),
    ramMb: a.ramMb,
    env: { ...a.env },
  };
  if (a.resources) allocation.resources = { ...a.resources };
  if (a.gpuShare) allocation.gpuShare = a.gpuShare;
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
 * The Queued detail's tail for an ask that waits for held machines (S6): `waiting for <names> to come back
 * (restart hold, N s left)` when only machines whose workers are not back (restored after a restart, or
 * disconnected) could hold it; '' otherwise. Cost: every machine, on the waiting path only.
 */
export function comingBackDetail(machines: MachineSet, ask: NormalizedAsk, amount: Amount): string {
  const could = (m: MachineEntry) => eligible(m, ask) && m.books.canEverHold(amount);
  const back: MachineEntry[] = [];
  for (const m of machines.all()) {
    if (!could(m)) continue;
    if (m.hold === undefined) return '';
    back.push(m);
  }
  if (back.length === 0) return '';
  const until = Math.max(...back.map((m) => m.hold?.untilMs ?? 0));
  const names = back.map((m) => m.spec.name);
  const shown = names.length > 3 ? `${names.slice(0, 3).join(', ')} and ${names.length - 3} more` : names.join(', ');
  const left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
  const why = back.every((m) => m.hold?.why.startsWith('restored')) ? 'restart hold' : 'worker hold';
  return `: waiting for ${shown} to come back (${why}, ${left} s left)`;
}
