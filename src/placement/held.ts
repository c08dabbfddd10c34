/**
 * The held claims by id (SPEC P8), counted against their tenant's quota as they come and go (SPEC Q3): every path
 * that files or drops a claim (a grant, a release, a restore from the journal, a group, a machine that left) goes
 * through `set` and `delete`, so a tenant's use is always what it holds.
 */
import type { Amount } from '../resources/books.js';
import { UNIT } from '../resources/quantity.js';
import type { FairShare } from './fair-share.js';
import type { QuotaBook, Usage } from './quota.js';
import type { Held } from './state.js';
import type { AllocationGrant } from './types.js';

/**
 * What a held allocation takes from its tenant's quota, in units: cores, GPUs (a share: its fraction), memory, names.
 */
export function heldUsage(a: AllocationGrant): Usage {
  const gpus = a.gpuShare ? a.gpuShare : a.gpuIds.length * UNIT;
  return { cpus: a.cpus * UNIT, gpus, ram_mb: (a.ramMb ?? 0) * UNIT, ...a.resources };
}

/** What granting `amount` (and `pools`, units) would take from a quota, in units: as `heldUsage` of its grant. */
export function askUsage(amount: Amount, pools: Record<string, number> | undefined): Usage {
  const gpus = amount.share ? amount.share : amount.gpus * UNIT;
  return { cpus: amount.cpus * UNIT, gpus, ram_mb: (amount.ramMb ?? 0) * UNIT, ...amount.res, ...pools };
}

/**
 * Held claims by id; `changed(owner)` hears each change of a quota-bound owner's use; `fair` counts every owner's use
 * while fair sharing is on (SPEC Q1).
 */
export class HeldClaims extends Map<string, Held> {
  constructor(
    readonly quotas: QuotaBook,
    readonly changed: (owner: string) => void,
    readonly fair?: FairShare,
  ) {
    super();
  }

  override set(id: string, h: Held): this {
    const old = super.get(id);
    if (old !== h) {
      if (old) this.#count(old, -1);
      this.#count(h, 1);
    }
    return super.set(id, h);
  }

  override delete(id: string): boolean {
    const old = super.get(id);
    if (old) this.#count(old, -1);
    return super.delete(id);
  }

  /** Every held claim's owner and use (a quota reload recounts from these). */
  *usages(): IterableIterator<[string | undefined, Usage]> {
    for (const h of this.values()) yield [h.grant.ask.owner, heldUsage(h.grant.allocation)];
  }

  #count(h: Held, sign: 1 | -1): void {
    const owner = h.grant.ask.owner;
    const fair = this.fair?.active === true;
    const quota = this.quotas !== undefined && this.quotas.quotaOf(owner) !== undefined;
    if (!fair && !quota) return;
    const u = heldUsage(h.grant.allocation);
    if (fair) this.fair!.add(owner, u, sign);
    if (!quota) return;
    this.quotas.add(owner, u, sign);
    this.changed(owner!);
  }
}
