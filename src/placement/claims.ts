/**
 * The claim lifecycle after a grant (SPEC P8, R5, S4, W3): release behind the release gate, giving the books
 * back, restoring a claim from the journal, and losing every claim of a machine that left.
 */
import { BerthError } from '../errors.js';
import { describeAmount } from '../resources/books.js';
import { askFacts, heldFacts } from './grant.js';
import { wakePools } from './pool-fit.js';
import type { MachineEntry } from './machines.js';
import { restoreLease, type RestoredClaim } from './restore.js';
import type { Settler } from './settle.js';
import type { Held, PlacerState } from './state.js';
import type { Grant } from './types.js';

/**
 * When a released claim's resources may be granted again (SPEC R5): stops the runs inside claim
 * `claimId` with `reason()` (built on demand; leaves them running when `reason` is undefined) and returns a promise
 * that resolves once their processes are gone, or undefined when nothing runs inside it (the books
 * are given back at once).
 */
export type ReleaseGate = (claimId: string, reason: (() => BerthError) | undefined) => Promise<void> | undefined;

/** Held claims: release, restore, loss. */
export class ClaimBook {
  constructor(
    readonly s: PlacerState,
    readonly settler: Settler,
  ) {}

  /**
   * See Placer.release. `gate`: the hub's release gate, if set. `preempted` (SPEC Q2): the lease ends ABORTED
   * "claim <id> released (<why>)" instead of CANCELLED, and the release's outcome is `preempted`. `given` is called
   * once its books are back, before the queue settles (a preempted claim requeues there, SPEC Q2).
   */
  release(
    claimId: string,
    why: string,
    keepRuns: boolean,
    gate: ReleaseGate | undefined,
    preempted = false,
    given?: (h: Held) => void,
  ): boolean {
    if (this.s.frozen) return false;
    const h = this.s.held.get(claimId);
    if (!h || h.releasing) return false;
    // Built only if a run inside must be stopped or someone reads the lease's `lost` (issue 9).
    let made: BerthError | undefined;
    const reason = () =>
      (made ??= new BerthError(
        preempted ? 'aborted' : 'cancelled',
        why === 'released' ? `claim ${claimId} released` : `claim ${claimId} released (${why})`,
      ));
    const gone = gate?.(claimId, keepRuns ? undefined : reason);
    if (!keepRuns) h.grant.loseLazily(reason);
    const outcome = preempted ? 'preempted' : why.toLowerCase().replace(/[^a-z0-9]+/g, '_');
    if (!gone) return this.#give(claimId, h, why, outcome, given);
    h.releasing = true;
    void gone.then(() => this.#give(claimId, h, why, outcome, given));
    return true;
  }

  #give(claimId: string, h: Held, why: string, outcome: string, given?: (h: Held) => void): boolean {
    const s = this.s;
    if (s.held.get(claimId) !== h) {
      given?.(h); // its machine left meanwhile, books and all: a preempted claim still waits again (SPEC Q2)
      if (given) this.settler.settle();
      return false;
    }
    s.held.delete(claimId);
    s.machines.give(h.entry, claimId);
    wakePools(s, s.pools.give(claimId));
    s.changed.add(h.entry);
    s.touched.add(h.entry);
    s.events.emit({
      kind: 'claim_released',
      claimId,
      machine: h.grant.machine,
      node: h.grant.ask.node,
      runId: h.grant.ask.runId,
      detail: why,
      ...heldFacts(h),
      outcome,
    });
    given?.(h);
    this.settler.settle();
    return true;
  }

  /** See Placer.restoreClaim. */
  restore(c: RestoredClaim): Grant {
    const s = this.s;
    if (s.held.has(c.claimId))
      throw new BerthError('failed_precondition', `claim ${c.claimId} cannot be restored: it is held already`);
    const { lease, entry } = restoreLease(s.machines, c);
    if (c.ask.pools) {
      if (!s.pools.fits(c.ask.pools)) {
        s.machines.give(entry, c.claimId);
        throw new BerthError('failed_precondition', `claim ${c.claimId} cannot be restored: its pools are not free`);
      }
      s.pools.take(c.claimId, c.ask.pools);
    }
    s.held.set(c.claimId, { grant: lease, entry, since: c.at ?? Date.now(), prio: c.ask.priority ?? 0 });
    s.changed.add(entry);
    const a = lease.allocation;
    const amount = { cpus: a.cpus, gpus: a.gpuIds.length, ramMb: a.ramMb };
    s.events.emit({
      kind: 'node_placed',
      claimId: c.claimId,
      node: c.ask.node,
      runId: c.ask.runId,
      machine: entry.spec.name,
      ...askFacts(c.ask, amount, lease.clamped),
      granted: amount,
      gpuIds: a.gpuIds,
      detail:
        `restored from the journal: ${describeAmount(amount)} ` +
        `on ${entry.spec.name}${a.gpuIds.length ? ` (gpu ${a.gpuIds.join(',')})` : ''}`,
    });
    this.settler.settle();
    return lease;
  }

  /**
   * Machine `entry` (named `name`) left with its books (SPEC W3): each claim on it loses its lease (`lost` aborts
   * with UNAVAILABLE "<reason>: claim <id> on <name> lost") and claim_lost is emitted. Cost: every held claim.
   */
  loseOn(entry: MachineEntry, name: string, reason: string): void {
    const lost = [...this.s.held.values()].filter((h) => h.entry === entry);
    for (const h of lost) this.s.held.delete(h.grant.claimId);
    for (const h of lost) wakePools(this.s, this.s.pools.give(h.grant.claimId)); // the pools come back (issue 23)
    for (const h of lost) {
      const g = h.grant;
      g.lose(new BerthError('unavailable', `${reason}: claim ${g.claimId} on ${name} lost`));
      this.s.events.emit({
        kind: 'claim_lost',
        claimId: g.claimId,
        machine: name,
        node: g.ask.node,
        runId: g.ask.runId,
        detail: reason,
        ...heldFacts(h),
        outcome: 'lost',
      });
    }
  }
}
