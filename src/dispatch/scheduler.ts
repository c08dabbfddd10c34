/**
 * Scheduler: decides which queued jobs start now (SPEC D3). Pure bookkeeping, no timers: the
 * batch calls `admit()` at the start and again the moment a job ends, so a freed device is used
 * at once (event driven, no polling).
 *
 * Strict FIFO by default: jobs start in file order and a job that does not fit blocks the ones
 * behind it. With a backfill budget, a later job that fits the free devices may start ahead of a
 * blocked head, at most `backfill` times per head; once the budget is spent nothing more starts
 * until the head does, so the head is never starved.
 *
 * A job asking a share of one device (`devices: 0.5`) takes that share of one id, best fit first (the partly used
 * device that leaves the least over), never an id held whole; a whole job takes only ids with nothing held (SPEC
 * P14, as berth's books do).
 */
import type { DevicePool } from '../resources/devices.js';
import { toUnits, UNIT } from '../resources/quantity.js';

/** A job allowed to start: its batch index and the device ids taken for it. */
export interface Admission {
  index: number;
  ids: number[];
}

/** Limits of one scheduler. */
export interface SchedulerLimits {
  /** Most jobs in flight (≥ 1), the `-j` value. */
  maxInFlight: number;
  /** Most overtakes of one blocked head; 0 = strict FIFO. */
  backfill: number;
}

/** Queue and held devices of one batch. */
export class Scheduler {
  readonly #demands: readonly number[];
  readonly #pool: DevicePool | null;
  readonly #limits: SchedulerLimits;
  #queue: number[];
  readonly #held = new Map<number, number[]>();
  /** Units of 1e-4 each job asks of one device when it asks a share (0 < units < UNIT), else 0. */
  readonly #shares: readonly number[];
  #overtakes = 0;

  /**
   * @param demands device count per job, in file order, or a share of one device in (0, 1).
   * @param pool the devices to hand out; null when a server places jobs (only `-j` limits then).
   */
  constructor(demands: readonly number[], pool: DevicePool | null, limits: SchedulerLimits) {
    this.#demands = demands;
    this.#pool = pool;
    this.#limits = limits;
    this.#queue = demands.map((_, i) => i);
    this.#shares = demands.map((d) => (d > 0 && d < 1 ? (toUnits(d) ?? UNIT) : 0));
  }

  /** Jobs waiting to start. */
  get queued(): number {
    return this.#queue.length;
  }

  /** Jobs admitted and not yet released. */
  get running(): number {
    return this.#held.size;
  }

  #fit(index: number): number[] | undefined {
    if (this.#pool === null) return [];
    const units = this.#shares[index];
    if (units === 0) return this.#pool.pick(this.#demands[index]);
    const id = this.#pool.pickShare(units);
    return id === undefined ? undefined : [id];
  }

  #start(index: number, ids: number[], out: Admission[]): void {
    const units = this.#shares[index];
    if (units > 0) this.#pool?.takeShare(ids[0], units);
    else this.#pool?.take(ids);
    this.#held.set(index, ids);
    this.#queue = this.#queue.filter((i) => i !== index);
    out.push({ index, ids });
  }

  /** Takes devices for every job that may start now and returns them in start order. */
  admit(): Admission[] {
    const out: Admission[] = [];
    while (this.#held.size < this.#limits.maxInFlight && this.#queue.length > 0) {
      const head = this.#queue[0];
      const ids = this.#fit(head);
      if (ids !== undefined) {
        this.#start(head, ids, out);
        this.#overtakes = 0;
        continue;
      }
      if (this.#overtakes >= this.#limits.backfill) break;
      const later = this.#queue.slice(1).find((i) => this.#fit(i) !== undefined);
      if (later === undefined) break;
      this.#start(later, this.#fit(later) as number[], out);
      this.#overtakes++;
    }
    return out;
  }

  /** Gives back the devices of a job that ended. @throws Error if the job was not admitted. */
  release(index: number): void {
    const ids = this.#held.get(index);
    if (ids === undefined) throw new Error(`job ${index} holds nothing`);
    this.#held.delete(index);
    const units = this.#shares[index];
    if (units > 0) this.#pool?.giveShare(ids[0], units);
    else this.#pool?.give(ids);
  }

  /** Empties the queue (fail-fast, cancel, batch timeout); returns the indices that will never start. */
  dropQueued(): number[] {
    const dropped = this.#queue;
    this.#queue = [];
    return dropped;
  }
}
