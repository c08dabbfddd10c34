/**
 * The provisioning loop (SPEC P10, V2–V4): the placer hands it the demand after every change of
 * the books; it shares the demand out to the provisioners (the first whose shape covers a claim
 * takes it), tells the placer which waiters' reasons changed, and on timers gives idle machines
 * back, fails starts that never attach and reconciles with each engine (also once at start-up).
 */
import type { Logger } from '../log/logger.js';
import { amountOf } from '../placement/choose.js';
import type { DemandView, PlacerCallbacks, Provisioning, ProvisionerView, Unmet } from '../placement/provisioner.js';
import type { NormalizedAsk } from '../placement/types.js';
import { describeAmount } from '../resources/books.js';
import type { Pool } from './pool.js';
import { StateDirLock } from './state-lock.js';

/** Timing in ms: timeouts checked every `tickMs` (default 500), engines polled every `reconcileMs` (default 2000). */
export interface LoopTiming {
  tickMs?: number;
  reconcileMs?: number;
}

/** Runs every pool of one server. `start()` before serving, `close()` on shutdown. */
export class ProvisioningLoop implements Provisioning {
  #placer?: PlacerCallbacks;
  #view: DemandView = { unmet: [], waiting: [], machines: [] };
  #timers: NodeJS.Timeout[] = [];
  #closed = false;
  #busy = false;
  #dirty = false;
  #reconciling = false;

  #lock?: StateDirLock;

  /**
   * @param stateDir where the pools keep their ledgers: held by one server at a time (state-lock.ts);
   *   `serving()` is the address named to a second server refused there. Undefined: no lock (tests).
   */
  constructor(
    readonly pools: Pool[],
    readonly log: Logger,
    readonly timing: LoopTiming = {},
    readonly stateDir?: { dir: string; serving: () => string },
  ) {}

  /**
   * Takes the state directory, reads each pool's shapes, adopts what the ledgers list, reconciles once (start-up),
   * starts the timers.
   * @throws Error when another live server holds the state directory, or shapes cannot be read.
   */
  async start(): Promise<void> {
    if (this.stateDir) this.#lock = StateDirLock.acquire(this.stateDir.dir, this.stateDir.serving());
    await Promise.all(this.pools.map((p) => p.init()));
    await this.#reconcile();
    this.#timers.push(setInterval(() => this.#tick(), this.timing.tickMs ?? 500).unref());
    this.#timers.push(setInterval(() => void this.#reconcile(), this.timing.reconcileMs ?? 2000).unref());
  }

  bind(placer: PlacerCallbacks): void {
    this.#placer = placer;
  }

  covers(ask: NormalizedAsk): boolean {
    const u = { ask, amount: amountOf(ask) };
    return this.pools.some((p) => p.covers(u));
  }

  coversGpuType(t: string): boolean {
    return this.pools.some((p) => p.shapes.some((s) => s.gpuType === t));
  }

  shapesWithLabel(label: string): string {
    const words = this.pools.flatMap((p) =>
      p.shapes.filter((s) => s.labels.includes(label)).map((s) => `${p.cfg.name}: ${describeAmount(s)} [${label}]`),
    );
    return words.join('; ');
  }

  plan(view: DemandView): void {
    this.#view = view;
    this.#planNow();
  }

  reason(claimId: string): string | undefined {
    for (const p of this.pools) {
      const r = p.reason(claimId);
      if (r) return r;
    }
    return undefined;
  }

  statuses(): ProvisionerView[] {
    return this.pools.map((p) => p.view());
  }

  /** Re-plans from the last demand seen (a start finished or failed). */
  replan(): void {
    this.#planNow();
  }

  /** Stops planning and starting (shutdown begins); machines keep running until close(). */
  pause(): void {
    this.#closed = true;
    for (const t of this.#timers) clearInterval(t);
  }

  /** Stops planning, waits for starts in flight, then stops every machine started until its engine no longer has it. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const t of this.#timers) clearInterval(t);
    await Promise.all(this.pools.flatMap((p) => [...p.submitting]));
    await Promise.all(
      this.pools.map((p) =>
        p.backend.close(p.engineIds()).then(
          () => p.clearLedger(),
          (e: unknown) =>
            this.log.warn({ provisioner: p.cfg.name, err: (e as Error).message }, 'stopping machines failed'),
        ),
      ),
    );
    this.#lock?.release();
  }

  /**
   * A second signal: stops planning and ends every machine started at once, without waiting (local
   * process groups SIGKILLed, Slurm jobs scancelled). The ledgers stay, so a later server adopts
   * and stops whatever survived. Never throws.
   */
  killNow(): void {
    this.pause();
    for (const p of this.pools) {
      try {
        p.backend.killNow(p.engineIds());
      } catch (e) {
        this.log.warn({ provisioner: p.cfg.name, err: (e as Error).message }, 'ending machines at once failed');
      }
    }
    this.#lock?.release();
  }

  /** Re-plans from the last view; deferred while a timer callback is running (no re-entry). */
  #planNow(): void {
    if (this.#closed) return;
    if (this.#busy) {
      this.#dirty = true;
      return;
    }
    this.#busy = true;
    try {
      do {
        this.#dirty = false;
        const attached = new Map(this.#view.machines.map((m) => [m.name, m.claims]));
        const shares = new Map<Pool, Unmet[]>(this.pools.map((p) => [p, []]));
        for (const u of this.#view.unmet) {
          const p = this.pools.find((x) => x.covers(u));
          if (p) shares.get(p)!.push(u);
        }
        const changed = this.pools.flatMap((p) => p.plan(shares.get(p)!, attached, this.#view.waiting));
        if (changed.length) this.#placer?.requeue(changed);
      } while (this.#dirty);
    } finally {
      this.#busy = false;
    }
  }

  #tick(): void {
    if (this.#closed || !this.#placer) return;
    const retire = this.#placer.retire;
    this.#busy = true;
    let changed = false;
    try {
      for (const p of this.pools) changed = p.tick(retire) || changed;
    } finally {
      this.#busy = false;
    }
    if (changed || this.#dirty) this.#planNow();
  }

  async #reconcile(): Promise<void> {
    if (this.#closed || this.#reconciling) return;
    this.#reconciling = true;
    try {
      const changed = await Promise.all(this.pools.map((p) => p.reconcile()));
      if (changed.some(Boolean)) this.#planNow();
    } finally {
      this.#reconciling = false;
    }
  }
}
