/**
 * Tenant quotas (SPEC Q3, issue 22 item 3): a tenant is a client identity (a `--client-tokens` name or a certificate
 * name, SPEC R7). The config gives a tenant a `nominal` quota per resource and optionally a `cohort` it shares with:
 * it may then borrow what the cohort's other tenants lend (`borrowing_limit`, default unlimited) and lends what it
 * does not use (`lending_limit`, default all of its nominal). Checked in the same placer step as placement, so what
 * quota admits is placed at once and nothing is admitted that cannot be placed. Resources a tenant's `nominal` does
 * not name are not limited for it; callers without an entry are not limited. All quantities are in units of 1e-4
 * (resources/quantity.ts): cores, GPUs (a share counts its fraction), MB of memory, named resources and pools.
 */
import { fromUnits, type Named } from '../resources/quantity.js';

/** One tenant's entry of the config (`tenants: <name>:`), in units. */
export interface TenantQuota {
  /** The cohort it borrows from and lends to; absent = none (it never borrows). */
  cohort?: string;
  /** What it is guaranteed, per resource (`cpus`, `gpus`, `ram_mb`, a named resource or pool). */
  nominal: Named;
  /** At most this much beyond `nominal`, per resource; absent = unlimited within the cohort (0 without one). */
  borrowingLimit?: Named;
  /** At most this much of its unused `nominal` lent to its cohort, per resource; absent = all of it. */
  lendingLimit?: Named;
  /** Its weight in fair sharing (SPEC Q1, fair-share.ts); absent = 1. Any tenant with one turns fair sharing on. */
  weight?: number;
}

/** Quotas by tenant name (config `tenants:`). */
export type TenantQuotas = Record<string, TenantQuota>;

/** One tenant's use against its quota, for the snapshot and metrics (plain numbers, not units). */
export interface TenantView {
  tenant: string;
  cohort?: string;
  /** Per resource its nominal names: in use, nominal, borrowing limit (-1 = unlimited). */
  resources: { name: string; used: number; nominal: number; borrowingLimit: number }[];
  /** With fair sharing on (SPEC Q1): its weight and its weighted dominant share. */
  fair?: { weight: number; share: number };
}

/** What a claim takes from its tenant's quota, in units (see `usageOf`). */
export type Usage = Named;

const plain = (u: number) => String(fromUnits(u));

/** Quotas, and what each tenant holds now. Replaced whole by `set`; usage follows the held claims (held.ts). */
export class QuotaBook {
  #quotas: TenantQuotas = {};
  /** What each tenant with a quota holds, in units. */
  readonly #used = new Map<string, Usage>();
  /** Tenants by cohort. */
  #cohorts = new Map<string, string[]>();
  /**
   * What each tenant's waiters taking back their cohort's lent share will hold (reclaim.ts): counted against the
   * other members' asks, so a borrower does not take again what it was told to give back.
   */
  readonly #reserved = new Map<string, Usage>();

  /** True when some tenant has a quota: only then is anything checked or counted. */
  get active(): boolean {
    return this.#cohorts.size > 0 || Object.keys(this.#quotas).length > 0;
  }

  /** Replaces every quota (a config reload: all or nothing); `held` is what is held now, by owner. */
  set(quotas: TenantQuotas, held: Iterable<[string | undefined, Usage]>): void {
    this.#quotas = { ...quotas };
    this.#cohorts = new Map();
    for (const [name, q] of Object.entries(quotas)) {
      if (q.cohort === undefined) continue;
      const members = this.#cohorts.get(q.cohort) ?? [];
      this.#cohorts.set(q.cohort, [...members, name]);
    }
    this.#used.clear();
    for (const [owner, u] of held) this.add(owner, u, 1);
  }

  /** The quota of `tenant`, if it has one. */
  quotaOf(tenant: string | undefined): TenantQuota | undefined {
    return tenant !== undefined && Object.hasOwn(this.#quotas, tenant) ? this.#quotas[tenant] : undefined;
  }

  /** The tenants whose room changes when `tenant`'s use does: it, and its cohort's other members. */
  affected(tenant: string): readonly string[] {
    const c = this.#quotas[tenant]?.cohort;
    return c === undefined ? [tenant] : this.#cohorts.get(c)!;
  }

  /** `sign` × `u` more held by `owner` (a grant +1, a release -1); no-op for an owner without a quota. */
  add(owner: string | undefined, u: Usage, sign: 1 | -1): void {
    const q = this.quotaOf(owner);
    if (!q) return;
    let used = this.#used.get(owner!);
    if (!used) this.#used.set(owner!, (used = {}));
    for (const k in q.nominal) if (u[k]) used[k] = (used[k] ?? 0) + sign * u[k];
  }

  /**
   * Why `owner` may not take `u` more now, or undefined when its quota (and its cohort's) has room:
   * `tenant a: gpus 4 of 4 nominal, borrowing 0 of 0 (asks 1)`, or with `; cohort c: 8 of 8 lent in use` when the
   * cohort has nothing left to lend. Cost: the resources its nominal names × the members of its cohort.
   */
  blocked(owner: string | undefined, u: Usage): string | undefined {
    const q = this.quotaOf(owner);
    if (!q) return undefined;
    const used = this.#used.get(owner!) ?? {};
    for (const k in q.nominal) {
      const ask = u[k] ?? 0;
      if (ask === 0) continue;
      const now = used[k] ?? 0;
      const nominal = q.nominal[k];
      const limit = borrowingLimit(q, k);
      // without a cohort nothing is borrowed: above its nominal only after a reload lowered it
      const borrowing = q.cohort === undefined ? 0 : Math.max(0, now - nominal);
      const own =
        `tenant ${owner}: ${k} ${plain(now)} of ${plain(nominal)} nominal, borrowing ` +
        `${plain(borrowing)} of ${limit === Infinity ? 'unlimited' : plain(limit)}`;
      if (now + ask > nominal + limit) return `${own} (asks ${plain(ask)})`;
      if (q.cohort === undefined) continue;
      const { drawn, pool, reserved } = this.#cohortUse(q.cohort, k, owner!, ask);
      if (drawn <= pool) continue;
      const held = reserved ? `, ${plain(reserved)} reserved for a reclaim` : '';
      return `${own}; cohort ${q.cohort}: ${k} ${plain(drawn - ask - reserved)} of ${plain(pool)} in use${held}`;
    }
    return undefined;
  }

  /**
   * Why `owner` can never be granted `u` under its quota as configured, whatever others give back, or undefined:
   * `ask.gpus: tenant carol may hold at most 2 (nominal 2, borrowing limit 0; asks 4)`. In a cohort it may hold at most
   * nominal + borrowing limit, and at most the part of its nominal it keeps plus all its cohort lends.
   */
  never(owner: string | undefined, u: Usage): string | undefined {
    const q = this.quotaOf(owner);
    if (!q) return undefined;
    for (const k in q.nominal) {
      const ask = u[k] ?? 0;
      if (ask === 0) continue;
      const nominal = q.nominal[k];
      const limit = borrowingLimit(q, k);
      let most = nominal + limit;
      let why = `nominal ${plain(nominal)}, borrowing limit ${limit === Infinity ? 'unlimited' : plain(limit)}`;
      if (q.cohort !== undefined) {
        const { pool } = this.#cohortUse(q.cohort, k, owner!, 0);
        const kept = nominal - Math.min(q.lendingLimit?.[k] ?? nominal, nominal);
        if (kept + pool < most) {
          most = kept + pool;
          why = `cohort ${q.cohort} lends ${plain(pool)} in all`;
        }
      }
      const field = ['cpus', 'gpus', 'ram_mb'].includes(k) ? `ask.${k}` : `ask.resources.${k}`;
      if (ask > most) return `${field}: tenant ${owner} may hold at most ${plain(most)} (${why}; asks ${plain(ask)})`;
    }
    return undefined;
  }

  /**
   * What the members of `cohort` draw from what they lend each other in resource `k` (with `ask` more for `owner`,
   * and the others' reclaim reservations, of which `reserved` is theirs), and what they lend: a member draws what it
   * holds beyond the part of its nominal it keeps (nominal − lending).
   */
  #cohortUse(cohort: string, k: string, owner: string, ask: number): { drawn: number; pool: number; reserved: number } {
    let drawn = 0;
    let pool = 0;
    let reserved = 0;
    for (const name of this.#cohorts.get(cohort)!) {
      const q = this.#quotas[name];
      if (!(k in q.nominal)) continue;
      const lend = Math.min(q.lendingLimit?.[k] ?? q.nominal[k], q.nominal[k]);
      pool += lend;
      // another member's waiter taking back what it lent counts as held (reclaim.ts)
      const extra = name === owner ? ask : (this.#reserved.get(name)?.[k] ?? 0);
      const used = this.#used.get(name)?.[k] ?? 0;
      const kept = q.nominal[k] - lend;
      const d = Math.max(0, used + extra - kept);
      drawn += d;
      if (name !== owner) reserved += d - Math.max(0, used - kept);
    }
    return { drawn, pool, reserved };
  }

  /** Every tenant with a quota, its use against it (plain numbers), by name. */
  views(): TenantView[] {
    return Object.entries(this.#quotas)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([tenant, q]) => ({
        tenant,
        ...(q.cohort === undefined ? {} : { cohort: q.cohort }),
        resources: Object.keys(q.nominal).map((name) => {
          const limit = borrowingLimit(q, name);
          return {
            name,
            used: fromUnits(this.#used.get(tenant)?.[name] ?? 0),
            nominal: fromUnits(q.nominal[name]),
            borrowingLimit: limit === Infinity ? -1 : fromUnits(limit),
          };
        }),
      }));
  }

  /** `sign` × `u` more reserved for `owner`'s waiter taking back what its cohort lent (SPEC Q3 reclaim). */
  reserve(owner: string, u: Usage, sign: 1 | -1): void {
    let r = this.#reserved.get(owner);
    if (!r) this.#reserved.set(owner, (r = {}));
    for (const k in u) if (u[k]) r[k] = (r[k] ?? 0) + sign * u[k];
    if (Object.values(r).every((v) => v === 0)) this.#reserved.delete(owner);
  }

  /** The cohort of `tenant`, if it has a quota in one. */
  cohortOf(tenant: string | undefined): string | undefined {
    return this.quotaOf(tenant)?.cohort;
  }

  /** True when some tenant is in a cohort: then one may take back what it lent (SPEC Q3 reclaim). */
  get cohorts(): boolean {
    return this.#cohorts.size > 0;
  }

  /**
   * True when `owner`, in a cohort, stays within its nominal with `u` more in every resource `u` takes that its
   * nominal names (and `u` takes one of them): only then may it take back what it lent.
   */
  withinNominal(owner: string | undefined, u: Usage): boolean {
    const q = this.quotaOf(owner);
    if (q?.cohort === undefined) return false;
    const used = this.#used.get(owner!) ?? {};
    let named = false;
    for (const k in u) {
      if (!u[k] || !(k in q.nominal)) continue;
      named = true;
      if ((used[k] ?? 0) + u[k] > q.nominal[k]) return false;
    }
    return named;
  }

  /** What `tenant` holds beyond its nominal of `k` (units): what it borrows; 0 when it does not or has no quota. */
  borrowed(tenant: string | undefined, k: string): number {
    const q = this.quotaOf(tenant);
    if (!q || !(k in q.nominal)) return 0;
    return Math.max(0, (this.#used.get(tenant!)?.[k] ?? 0) - q.nominal[k]);
  }

  /** As `blocked`, as if the tenants of `gone` had given back what it lists (owner → usage, units). */
  blockedWithout(owner: string | undefined, u: Usage, gone: ReadonlyMap<string, Usage>): string | undefined {
    for (const [t, g] of gone) this.add(t, g, -1);
    try {
      return this.blocked(owner, u);
    } finally {
      for (const [t, g] of gone) this.add(t, g, 1);
    }
  }

  /** What `tenant` holds of resource `k`, in units (tests and the invariant check). */
  used(tenant: string, k: string): number {
    return this.#used.get(tenant)?.[k] ?? 0;
  }
}

/** How far past its nominal `q` may go in `k` (units): its limit, unlimited in a cohort, else 0. */
function borrowingLimit(q: TenantQuota, k: string): number {
  if (q.cohort === undefined) return 0;
  return q.borrowingLimit?.[k] ?? Infinity;
}
