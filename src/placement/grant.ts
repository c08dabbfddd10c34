/**
 * Making a grant (SPEC P8, P9): takes the amount on the chosen machine's books (and the ask's pools), builds the
 * lease with its
 * env, files it as held and emits node_placed. Also the typed event facts of asks and held claims (issue 13).
 */
import { describeAmount, type Amount, type Holding } from '../resources/books.js';
import { amountOf } from './choose.js';
import { allocationEnv } from './env.js';
import { Lease } from './lease.js';
import type { MachineEntry } from './machines.js';
import { limitingDimension } from './oversize.js';
import type { Held, PlacerState } from './state.js';
import type { AllocationGrant, Grant, NormalizedAsk } from './types.js';

/**
 * Grants `amount` of `ask` to `claimId` on `entry` and returns its Grant. `since`: when it began waiting (ms since
 * the epoch), for the event's duration; absent for a grant made at once. `seq`: its arrival number as a waiter; absent
 * = a new one. @throws BooksError when it does not fit.
 */
export function grant(
  s: PlacerState,
  claimId: string,
  ask: NormalizedAsk,
  amount: Amount,
  clamped: boolean,
  entry: MachineEntry,
  fellBack: boolean,
  since?: number,
  seq = s.queue.nextSeq(),
): Grant {
  if (ask.pools) s.pools.take(claimId, ask.pools); // with the machine's resources, in one step (issue 23)
  let holding: Holding;
  try {
    holding = s.machines.take(entry, claimId, amount);
  } catch (err) {
    s.pools.give(claimId);
    throw err;
  }
  s.changed.add(entry);
  const t = entry.books.total;
  const env = allocationEnv(holding.cpus, holding.gpuIds, ask.env, {
    allIds: t.gpuIds,
    gpuNames: t.gpuNames,
    share: holding.share,
  });
  const allocation: AllocationGrant = { cpus: holding.cpus, gpuIds: holding.gpuIds, ramMb: holding.ramMb, env };
  if (holding.res || ask.pools) allocation.resources = { ...holding.res, ...ask.pools };
  if (holding.share) allocation.gpuShare = holding.share;
  const lease = new Lease(claimId, entry.spec.name, entry.spec.remote, allocation, clamped, fellBack, ask);
  s.held.set(claimId, { grant: lease, entry, since: Date.now(), prio: ask.priority ?? 0, seq });
  s.events.emit({
    kind: 'node_placed',
    claimId,
    node: ask.node,
    runId: ask.runId,
    machine: entry.spec.name,
    ...askFacts(ask, amount, clamped),
    granted: { cpus: holding.cpus, gpus: holding.gpuIds.length, ramMb: holding.ramMb },
    gpuIds: holding.gpuIds,
    fellBack,
    durationMs: since === undefined ? 0 : Date.now() - since,
    detail:
      `${describeAmount(amount)} on ${entry.spec.name}` +
      `${holding.gpuIds.length ? ` (gpu ${holding.gpuIds.join(',')}${holding.share ? ' shared' : ''})` : ''}` +
      `${fellBack ? ', fell back' : ''}${clamped ? ', clamped' : ''}`,
  });
  return lease;
}

/** Typed event facts of an ask (issue 13): what was asked before clamping, the label, clamped. */
export function askFacts(ask: NormalizedAsk, amount: Amount, clamped: boolean) {
  const asked = amountOf(ask);
  return {
    asked,
    label: ask.label || undefined,
    clamped,
    limiting: clamped ? limitingDimension(asked, amount) : undefined,
  };
}

/** Typed event facts of a held claim given back or lost: the amount, its device ids and how long it was held (ms). */
export function heldFacts(h: Held) {
  const a = h.grant.allocation;
  return {
    granted: { cpus: a.cpus, gpus: a.gpuIds.length, ramMb: a.ramMb },
    gpuIds: a.gpuIds,
    durationMs: Date.now() - h.since,
    label: h.grant.ask.label || undefined,
  };
}
