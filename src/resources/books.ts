/**
 * ResourceAccountant: the books of one machine — what it has, what is free, what each claim
 * holds (SPEC P8: free never exceeds total nor goes below zero; no device held twice).
 * Units: cpus in cores, ramMb in MB, named resources and GPU shares in units of 1e-4 (quantity.ts).
 */
import { DeviceAccountingError, DevicePool } from './devices.js';
import type { HostInventory } from './inventory.js';
import { describeNamed, fromUnits, UNIT, type Named } from './quantity.js';

/**
 * An amount of each dimension. `ramMb` undefined = none asked; `res`: named per-machine resources (units), if any;
 * `share`: a share of one GPU in units of 1e-4 (1..9999, then `gpus` is 0; issue 23 item 3).
 */
export interface Amount {
  cpus: number;
  gpus: number;
  ramMb?: number;
  res?: Named;
  share?: number;
  /** The GPU type required (issue 23 item 4): only a machine of that type holds it. */
  gpuType?: string;
}

/** What one claim holds on a machine. `res`: named resources in units; `share`: of `gpuIds[0]`, in units. */
export interface Holding {
  cpus: number;
  gpuIds: number[];
  ramMb?: number;
  res?: Named;
  share?: number;
}

/** Thrown when the books would break an invariant: a bug, never caused by input. */
export class BooksError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BooksError';
  }
}

/** The books of one machine. */
export class ResourceAccountant {
  readonly total: Readonly<HostInventory>;
  readonly #devices: DevicePool;
  #freeCpus: number;
  #freeRam: number | undefined;
  /** Free units of each named resource the machine has (issue 23 item 1). */
  readonly #freeRes: Named = {};
  readonly #held = new Map<string, Holding>();

  /** @param total the machine's inventory (ramMb undefined = memory not limited). */
  constructor(total: HostInventory) {
    const res = total.resources ? { ...total.resources } : undefined;
    this.total = { cpus: total.cpus, gpuIds: [...total.gpuIds].sort((a, b) => a - b), ramMb: total.ramMb };
    if (res) this.total = { ...this.total, resources: res };
    if (total.gpuType) this.total = { ...this.total, gpuType: total.gpuType };
    if (total.gpuNames) this.total = { ...this.total, gpuNames: [...total.gpuNames] };
    this.#devices = new DevicePool(total.gpuIds);
    this.#freeCpus = total.cpus;
    this.#freeRam = total.ramMb;
    if (res) Object.assign(this.#freeRes, res);
  }

  /**
   * What is free now. `ramMb` undefined when memory is not limited; `res` only when the machine has named ones;
   * `share` the largest share one GPU has left when no GPU is wholly free but some has room.
   */
  get free(): Amount {
    const a: Amount = { cpus: this.#freeCpus, gpus: this.#devices.freeCount, ramMb: this.#freeRam };
    if (this.total.resources) a.res = { ...this.#freeRes };
    if (a.gpus === 0) {
      const room = this.#devices.shareRoom();
      if (room > 0) a.share = room;
    }
    return a;
  }

  /** Units of 1e-4 held in shares of GPU `id` (0 when it is free or held whole). */
  sharedOf(id: number): number {
    return this.#devices.sharedOf(id);
  }

  /** The GPUs held in shares now and the units of each held, sorted by id. */
  sharedGpus(): [number, number][] {
    return this.#devices.shared();
  }

  /** The units held on each GPU held in shares now, in no order (no copy: for the placement indexes). */
  sharedUnits(): IterableIterator<number> {
    return this.#devices.sharedUnits();
  }

  /** The largest share one GPU has room for now, in units (UNIT when a GPU is wholly free). */
  get shareRoom(): number {
    return this.#devices.shareRoom();
  }

  /** Free units of named resource `name`; 0 when the machine has none of it. */
  freeOf(name: string): number {
    return this.#freeRes[name] ?? 0;
  }

  /** Free cores now (no allocation, for the placement indexes). */
  get freeCpus(): number {
    return this.#freeCpus;
  }

  /** Free devices now. */
  get freeGpus(): number {
    return this.#devices.freeCount;
  }

  /** Free memory now in MB; undefined when memory is not limited. */
  get freeRamMb(): number | undefined {
    return this.#freeRam;
  }

  /** Free device ids, sorted. */
  freeGpuIds(): number[] {
    return this.#devices.freeIds();
  }

  /** Number of claims held. */
  get claims(): number {
    return this.#held.size;
  }

  /** True when the machine could hold `a` if nothing else were held. */
  canEverHold(a: Amount): boolean {
    return (
      a.cpus <= this.total.cpus &&
      a.gpus <= this.total.gpuIds.length &&
      (!a.share || this.total.gpuIds.length > 0) &&
      (!a.gpuType || a.gpuType === this.total.gpuType) &&
      ramFits(a.ramMb, this.total.ramMb) &&
      (!a.res || namedFit(a.res, this.total.resources))
    );
  }

  /**
   * True when `a` fits what is free now minus `reserved` (held back for an older waiter). Shares held back
   * (`reserved.share`) keep whole asks off as many GPUs as they would fill, and are measured against the room for
   * shares on every GPU not held whole (SPEC P14): conservative, never letting a younger ask overtake.
   */
  fitsNow(a: Amount, reserved?: Amount): boolean {
    // A dimension the ask does not use is never held back by a reservation (issue 3, acceptance 13).
    const rc = reserved?.cpus ?? 0;
    const rg = reserved?.gpus ?? 0;
    const rs = reserved?.share ?? 0;
    return (
      (!a.gpuType || a.gpuType === this.total.gpuType) &&
      (a.cpus === 0 || a.cpus <= this.#freeCpus - rc) &&
      (a.gpus === 0 || a.gpus <= this.#devices.freeCount - rg - Math.ceil(rs / UNIT)) &&
      (!a.share ||
        (this.#devices.shareRoom() >= a.share &&
          (rg === 0 && rs === 0 ? true : this.#devices.shareRoomTotal() - rg * UNIT - rs >= a.share))) &&
      (!a.ramMb || this.#freeRam === undefined || a.ramMb <= this.#freeRam - (reserved?.ramMb ?? 0)) &&
      (!a.res || namedFit(a.res, this.#freeRes, reserved?.res))
    );
  }

  /**
   * Takes `a` for `claimId`: cores, the lowest contiguous free device ids, memory.
   * @throws BooksError when it does not fit or the claim id already holds something.
   */
  take(claimId: string, a: Amount): Holding {
    if (this.#held.has(claimId)) throw new BooksError(`claim ${claimId} already holds resources`);
    if (!this.fitsNow(a)) throw new BooksError(`claim ${claimId} does not fit`);
    const shareId = a.share ? this.#devices.pickShare(a.share) : undefined;
    const gpuIds = a.share ? (shareId === undefined ? undefined : [shareId]) : this.#devices.pick(a.gpus);
    if (!gpuIds) throw new BooksError(`claim ${claimId}: ${a.share ? 'a share' : a.gpus} device(s) not free`);
    if (a.share && shareId !== undefined) this.#devices.takeShare(shareId, a.share);
    else this.#devices.take(gpuIds);
    this.#freeCpus -= a.cpus;
    if (this.#freeRam !== undefined && a.ramMb !== undefined) this.#freeRam -= a.ramMb;
    const h: Holding = { cpus: a.cpus, gpuIds, ramMb: a.ramMb };
    if (a.share) h.share = a.share;
    if (a.res) {
      h.res = { ...a.res };
      for (const k in a.res) this.#freeRes[k] -= a.res[k];
    }
    this.#held.set(claimId, h);
    return h;
  }

  /**
   * Takes exactly `h` for `claimId` (a claim restored from the journal, SPEC S4): those cores, those
   * device ids, that memory. @throws BooksError naming what is not free, or when the claim id already holds.
   */
  takeExact(claimId: string, h: Holding): Holding {
    if (this.#held.has(claimId)) throw new BooksError(`claim ${claimId} already holds resources`);
    if (h.cpus > this.#freeCpus) throw new BooksError(`claim ${claimId}: ${h.cpus} cpu(s) not free`);
    if (h.ramMb !== undefined && this.#freeRam !== undefined && h.ramMb > this.#freeRam)
      throw new BooksError(`claim ${claimId}: ${h.ramMb} MB RAM not free`);
    for (const k in h.res ?? {})
      if ((h.res?.[k] ?? 0) > this.freeOf(k)) throw new BooksError(`claim ${claimId}: ${k} not free`);
    const ids = [...h.gpuIds].sort((a, b) => a - b);
    if (h.share) {
      if (ids.length !== 1 || !this.total.gpuIds.includes(ids[0]))
        throw new BooksError(`claim ${claimId}: a share names one gpu of the machine (got ${ids.join(',')})`);
      try {
        this.#devices.takeShare(ids[0], h.share);
      } catch (err) {
        if (err instanceof DeviceAccountingError) throw new BooksError(`claim ${claimId}: ${err.message}`);
        throw err;
      }
    } else {
      const free = new Set(this.#devices.freeIds());
      const busy = ids.filter((id) => !free.has(id));
      if (busy.length || new Set(ids).size !== ids.length)
        throw new BooksError(`claim ${claimId}: gpu ${busy.join(',') || ids.join(',')} not free`);
      this.#devices.take(ids);
    }
    this.#freeCpus -= h.cpus;
    if (this.#freeRam !== undefined && h.ramMb !== undefined) this.#freeRam -= h.ramMb;
    const held: Holding = { cpus: h.cpus, gpuIds: ids, ramMb: h.ramMb };
    if (h.share) held.share = h.share;
    if (h.res) {
      held.res = { ...h.res };
      for (const k in h.res) this.#freeRes[k] -= h.res[k];
    }
    this.#held.set(claimId, held);
    return held;
  }

  /** Gives back what `claimId` holds. Idempotent: returns false when it holds nothing. */
  give(claimId: string): boolean {
    const h = this.#held.get(claimId);
    if (!h) return false;
    this.#held.delete(claimId);
    if (h.share) this.#devices.giveShare(h.gpuIds[0], h.share);
    else this.#devices.give(h.gpuIds);
    this.#freeCpus += h.cpus;
    if (this.#freeRam !== undefined && h.ramMb !== undefined) this.#freeRam += h.ramMb;
    if (h.res) for (const k in h.res) this.#freeRes[k] += h.res[k];
    return true;
  }

  /**
   * Checks the invariants: free within [0, total] per dimension, no device in two holdings,
   * held = sum of holdings, no device's shares over 1 nor a device held whole and shared at once (SPEC P14).
   * @throws BooksError naming the broken one.
   */
  check(name: string): void {
    let cpus = 0;
    let ram = 0;
    const res: Named = {};
    const ids = new Set<number>();
    const shares = new Map<number, number>();
    for (const [id, h] of this.#held) {
      cpus += h.cpus;
      ram += h.ramMb ?? 0;
      for (const k in h.res ?? {}) res[k] = (res[k] ?? 0) + (h.res?.[k] ?? 0);
      if (h.share) {
        const g = h.gpuIds[0];
        if (h.gpuIds.length !== 1) throw new BooksError(`${name}: claim ${id} shares ${h.gpuIds.length} devices`);
        shares.set(g, (shares.get(g) ?? 0) + h.share);
        continue;
      }
      for (const g of h.gpuIds) {
        if (ids.has(g)) throw new BooksError(`${name}: device ${g} held twice (claim ${id})`);
        ids.add(g);
      }
    }
    if (this.#freeCpus < 0 || this.#freeCpus > this.total.cpus)
      throw new BooksError(`${name}: free cpus ${this.#freeCpus} outside [0, ${this.total.cpus}]`);
    if (cpus + this.#freeCpus !== this.total.cpus)
      throw new BooksError(`${name}: held cpus ${cpus} + free ${this.#freeCpus} ≠ ${this.total.cpus}`);
    for (const [g, units] of shares) {
      if (ids.has(g)) throw new BooksError(`${name}: device ${g} held whole and shared at once`);
      if (units > UNIT) throw new BooksError(`${name}: device ${g} shared ${fromUnits(units)} (over 1)`);
      if (units !== this.#devices.sharedOf(g))
        throw new BooksError(`${name}: device ${g} shares ${units} held, ${this.#devices.sharedOf(g)} booked`);
    }
    if (this.#devices.shared().length !== shares.size) throw new BooksError(`${name}: shared devices out of step`);
    if (ids.size + shares.size + this.#devices.freeCount !== this.total.gpuIds.length)
      throw new BooksError(
        `${name}: held devices ${ids.size} + shared ${shares.size} + free ${this.#devices.freeCount} ≠ ` +
          `${this.total.gpuIds.length}`,
      );
    for (const g of ids)
      if (this.#devices.freeIds().includes(g)) throw new BooksError(`${name}: device ${g} both held and free`);
    if (this.total.ramMb !== undefined && this.#freeRam !== undefined) {
      if (this.#freeRam < 0 || this.#freeRam > this.total.ramMb)
        throw new BooksError(`${name}: free ram ${this.#freeRam} outside [0, ${this.total.ramMb}]`);
      if (ram + this.#freeRam !== this.total.ramMb)
        throw new BooksError(`${name}: held ram ${ram} + free ${this.#freeRam} ≠ ${this.total.ramMb}`);
    }
    const totals = this.total.resources ?? {};
    for (const k of new Set([...Object.keys(totals), ...Object.keys(res)])) {
      const t = totals[k] ?? 0;
      const f = this.#freeRes[k] ?? 0;
      if (f < 0 || f > t) throw new BooksError(`${name}: free ${k} ${f} outside [0, ${t}]`);
      if ((res[k] ?? 0) + f !== t) throw new BooksError(`${name}: held ${k} ${res[k] ?? 0} + free ${f} ≠ ${t}`);
    }
  }
}

/** True when every named quantity of `want` fits `have` minus `reserved` (units); a name `have` lacks never fits. */
export function namedFit(want: Named, have: Named | undefined, reserved?: Named): boolean {
  for (const k in want) if (want[k] > (have?.[k] ?? 0) - (reserved?.[k] ?? 0)) return false;
  return true;
}

function ramFits(want: number | undefined, free: number | undefined): boolean {
  return want === undefined || free === undefined || want <= free;
}

/** "1 gpu(s) and 2 cpu(s)" — the human detail of an amount (SPEC P6); "nothing" when empty. */
export function describeAmount(a: Amount): string {
  const parts: string[] = [];
  if (a.gpus > 0) parts.push(`${a.gpus} gpu(s)`);
  if (a.share) parts.push(`${fromUnits(a.share)} gpu(s)`);
  if (a.cpus > 0) parts.push(`${a.cpus} cpu(s)`);
  if (a.ramMb) parts.push(`${a.ramMb} MB RAM`);
  if (a.res) parts.push(describeNamed(a.res));
  if (parts.length === 0) return 'nothing';
  return parts.length === 1 ? parts[0] : `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}`;
}
