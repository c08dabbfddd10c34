/**
 * Fair sharing between tenants (SPEC Q1, issue 22 item 3): with fair sharing on (some tenant of the config has a
 * `weight`), the next grant among waiters of one priority goes to the tenant with the lowest weighted dominant
 * share, then by arrival (order.ts). A tenant's dominant share is the largest fraction it holds of any resource the
 * attached machines and the pools have in all (cores, GPUs — a share counts its fraction —, MB of memory, named
 * resources, pools), divided by its weight (default 1). Callers with no entry, and callers with no identity at all,
 * are tenants of weight 1 too. Use is in units of 1e-4, as in quota.ts; it follows the held claims (held.ts).
 */
import type { Named } from '../resources/quantity.js';
import type { TenantQuotas, Usage } from './quota.js';

/** One tenant's standing for fair sharing: `share` is read by every queue-order comparison (order.ts). */
export interface TenantShare {
  /** The client identity; '' for callers without one. */
  readonly name: string;
  weight: number;
  /** What it holds, in units, per resource. */
  readonly used: Usage;
  /** Its weighted dominant share; 0 while fair sharing is off (then the order is by arrival alone). */
  share: number;
  /** Its share when the settle loop last looked (while it is in `FairShare.changed`). */
  before: number;
}

/** The tenants' shares of the cluster, kept current as claims are granted and released and machines come and go. */
export class FairShare {
  readonly #tenants = new Map<string, TenantShare>();
  #weights: Record<string, number> = {};
  #totals: Named = {};
  /** Tenants whose share changed since the settle loop last looked (it wakes their classes). */
  readonly changed = new Set<TenantShare>();

  #active = false;

  /** True when some tenant has a weight: only then are shares kept and compared. */
  get active(): boolean {
    return this.#active;
  }

  /** The standing of `owner` (undefined: a caller without identity), made on first sight. */
  of(owner: string | undefined): TenantShare {
    const name = owner ?? '';
    let t = this.#tenants.get(name);
    if (!t) {
      t = { name, weight: this.#weights[name] ?? 1, used: {}, share: 0, before: 0 };
      this.#tenants.set(name, t);
    }
    return t;
  }

  /** Replaces the weights (a config reload, all or nothing) and recounts every tenant's use from `held`. */
  set(weights: Record<string, number>, held: Iterable<[string | undefined, Usage]>): void {
    this.#weights = { ...weights };
    this.#active = Object.keys(weights).length > 0;
    for (const t of this.#tenants.values()) {
      t.weight = this.#weights[t.name] ?? 1;
      for (const k in t.used) delete t.used[k];
    }
    if (this.active) for (const [owner, u] of held) this.#add(this.of(owner), u, 1);
    this.#refreshAll();
  }

  /** The cluster's totals changed (a machine came or went, a pool was resized): every share is recomputed. */
  setTotals(totals: Named): void {
    this.#totals = totals;
    this.#refreshAll();
  }

  /** `sign` × `u` more held by `owner`; no-op while fair sharing is off. */
  add(owner: string | undefined, u: Usage, sign: 1 | -1): void {
    if (!this.active) return;
    const t = this.of(owner);
    this.#add(t, u, sign);
    this.#refresh(t);
  }

  #add(t: TenantShare, u: Usage, sign: 1 | -1): void {
    for (const k in u) if (u[k]) t.used[k] = (t.used[k] ?? 0) + sign * u[k];
  }

  #refreshAll(): void {
    for (const t of this.#tenants.values()) this.#refresh(t);
  }

  /** Recomputes `t.share`: max over resources the cluster has of used / total, divided by its weight. */
  #refresh(t: TenantShare): void {
    let dominant = 0;
    if (this.active) {
      for (const k in t.used) {
        const total = this.#totals[k];
        if (total > 0 && t.used[k] > 0) dominant = Math.max(dominant, t.used[k] / total);
      }
    }
    const share = dominant / t.weight;
    if (share === t.share) return;
    if (!this.changed.has(t)) t.before = t.share;
    t.share = share;
    this.changed.add(t);
  }

  /**
   * True when `t`'s move from `t.before` to `t.share` changed its order against another tenant: some other tenant's
   * share lies between the two (ties included, where arrival decides). Cost: the tenants seen.
   */
  reordered(t: TenantShare): boolean {
    const lo = Math.min(t.before, t.share);
    const hi = Math.max(t.before, t.share);
    for (const u of this.#tenants.values()) if (u !== t && u.share >= lo && u.share <= hi) return true;
    return false;
  }

  /** The weighted dominant share of `tenant` (0 for one never seen), for the snapshot and metrics. */
  shareOf(tenant: string): number {
    return this.#tenants.get(tenant)?.share ?? 0;
  }

  /** The weight of `tenant` (1 unless the config gives one). */
  weightOf(tenant: string): number {
    return this.#weights[tenant] ?? 1;
  }
}

/** The weights the config gives (`tenants.<name>.weight`), by tenant; empty when none has one (fair sharing off). */
export function weightsOf(quotas: TenantQuotas): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, q] of Object.entries(quotas)) if (q.weight !== undefined) out[name] = q.weight;
  return out;
}
