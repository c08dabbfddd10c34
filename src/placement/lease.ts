/**
 * A granted claim (SPEC P8, W3). Its `lost` signal is made only when someone reads it, so a claim
 * that is granted and released in process costs no AbortController; a lease lost before anyone
 * looked gives an already-aborted signal with the same reason.
 */
import type { AllocationGrant, Grant, NormalizedAsk } from './types.js';

/** The Grant the placer hands out, with a lazily made `lost` signal. */
export class Lease implements Grant {
  #lost?: AbortController;
  #gone = false;
  #reason: unknown;
  #makeReason?: () => unknown;

  constructor(
    readonly claimId: string,
    readonly machine: string,
    readonly remote: boolean,
    readonly allocation: AllocationGrant,
    readonly clamped: boolean,
    readonly fellBack: boolean,
    readonly ask: NormalizedAsk,
  ) {}

  /**
   * The lease is over: aborted with BerthError('unavailable', "worker <name> went away …") when the
   * machine leaves, or BerthError('cancelled', "claim <id> released (…)") on release (SPEC R5).
   */
  get lost(): AbortSignal {
    if (!this.#lost) {
      this.#lost = new AbortController();
      if (this.#gone) this.#lost.abort(this.#why());
    }
    return this.#lost.signal;
  }

  /**
   * The machine left or the claim was released: `lost` aborts with `reason` (now, or when first read). First call wins.
   */
  lose(reason: unknown): void {
    if (this.#gone) return;
    this.#gone = true;
    this.#reason = reason;
    this.#lost?.abort(reason);
  }

  /** As `lose`, with the reason built by `make` only once someone reads `lost` (issue 9: no error per release). */
  loseLazily(make: () => unknown): void {
    if (this.#gone) return;
    this.#gone = true;
    this.#makeReason = make;
    if (this.#lost) this.#lost.abort(this.#why());
  }

  #why(): unknown {
    if (this.#makeReason) {
      this.#reason = this.#makeReason();
      this.#makeReason = undefined;
    }
    return this.#reason;
  }
}
