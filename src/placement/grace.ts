/**
 * Label grace (SPEC P3, issue 10 item 10, issue 23 item 7): a required label whose machines left still counts for
 * the reconnect grace, and any required label counts during the restart grace (a restarted server waiting for its
 * workers). An ask for a label no machine carries, none coming back and no provisioner covers fails
 * FAILED_PRECONDITION; so does one needing cores when no eligible machine has any, once the restart grace is over.
 */
import { BerthError } from '../errors.js';
import { describeAmount } from '../resources/books.js';
import { fromUnits } from '../resources/quantity.js';
import { amountOf, requires } from './choose.js';
import { noCores, noCoresError } from './oversize.js';
import type { Settler } from './settle.js';
import type { PlacerState } from './state.js';
import type { NormalizedAsk } from './types.js';

/** Which labels count as coming back, until when, and failing the waiters whose grace ran out. */
export class LabelGrace {
  /** Label → when its last machine left (ms since the epoch). */
  readonly #detached = new Map<string, number>();

  /**
   * @param graceMs how long a detached label still counts (ms)
   * @param restartUntil until when (ms since the epoch) every required label counts as coming back
   */
  constructor(
    readonly s: PlacerState,
    readonly settler: Settler,
    readonly graceMs: number,
    readonly restartUntil: number,
  ) {
    const ms = restartUntil - Date.now();
    if (ms > 0) setTimeout(() => this.expire(), ms + 1).unref();
  }

  /** Machine labels `labels` left the books: they count for the reconnect grace from now. */
  left(labels: readonly string[]): void {
    for (const label of labels) this.#detached.set(label, Date.now());
    if (labels.length) setTimeout(() => this.expire(), this.graceMs + 1).unref();
  }

  /**
   * After a restart: the last machine carrying `label` left at `goneAt` (ms since the epoch, from the journal), so it
   * counts for the reconnect grace from then, as before the restart (SPEC P3).
   */
  restore(label: string, goneAt: number): void {
    this.#detached.set(label, Math.max(goneAt, this.#detached.get(label) ?? 0));
    const left = goneAt + this.graceMs - Date.now();
    if (left > 0) setTimeout(() => this.expire(), left + 1).unref();
  }

  /**
   * @throws BerthError FAILED_PRECONDITION for a required label none carries, none coming back (SPEC P3), or a
   *   named resource no machine, pool or provisioner shape has, or more of a pool than it holds (issue 23 item 5), or
   *   a GPU type no machine has (item 4).
   */
  check(ask: NormalizedAsk): void {
    if (this.labelMissing(ask) && this.until(ask.label) < Date.now()) throw this.noLabel(ask);
    const named = this.namedError(ask);
    if (named) throw named;
  }

  /**
   * FAILED_PRECONDITION naming `ask.resources.<name>` for a named resource no machine has, no pool is and no
   * provisioner shape starts (once the restart grace is over: the machines having it may be coming back), or for
   * more of a pool than its total; undefined when every name is known.
   */
  namedError(ask: NormalizedAsk): BerthError | undefined {
    const { machines, pools, prov } = this.s;
    for (const k in ask.pools ?? {}) {
      const want = ask.pools?.[k] ?? 0;
      if (want > pools.total[k])
        return new BerthError(
          'failed_precondition',
          `ask.resources.${k}: asked ${fromUnits(want)} but pool ${k} holds ${fromUnits(pools.total[k])}`,
        );
    }
    if (this.restartUntil > Date.now()) return undefined;
    const t = ask.gpuType;
    if (t && !machines.hasGpuType(t) && !prov?.coversGpuType(t)) {
      const have = machines.gpuTypes();
      const here = have.length ? `types here: ${have.join(', ')}` : 'none is typed';
      return new BerthError(
        'failed_precondition',
        `ask.gpu_type: no machine has GPUs of type '${t}' and no provisioner shape starts one (${here}; a worker ` +
          'reports its type with --gpu-type, a shape with gpu_type)',
      );
    }
    if (!ask.resources) return undefined;
    for (const k in ask.resources) {
      if (machines.hasResource(k) || prov?.covers({ ...ask, pools: undefined, resources: { [k]: 1 } })) continue;
      return new BerthError(
        'failed_precondition',
        `ask.resources.${k}: no machine has '${k}', no pool is named so and no provisioner can start one that has it`,
      );
    }
    return undefined;
  }

  /** True when `ask` needs cores no eligible machine has, nothing covers it and the restart grace is over. */
  coresNowhere(ask: NormalizedAsk): boolean {
    return this.restartUntil < Date.now() && !this.s.prov?.covers(ask) && noCores(this.s.machines, ask);
  }

  /** True when `ask` requires a label that no machine carries and no provisioner covers (SPEC P3, P10). */
  labelMissing(ask: NormalizedAsk): boolean {
    return requires(ask) && !this.s.machines.hasLabel(ask.label) && !this.s.prov?.covers(ask);
  }

  /** Until when `label` counts as coming back: the reconnect grace after its last machine left, or restart grace. */
  until(label: string): number {
    const gone = this.#detached.get(label);
    return Math.max(gone === undefined ? 0 : gone + this.graceMs, this.restartUntil);
  }

  /** For a required label no machine carries, `until`; 0 when it is carried, not required, or covered. */
  comingBackUntil(ask: NormalizedAsk): number {
    return this.labelMissing(ask) ? this.until(ask.label) : 0;
  }

  /**
   * FAILED_PRECONDITION for a required label no machine carries, none is coming back and no provisioner can
   * start (SPEC P3); when provisioners start machines with the label, but none big enough, it names their shapes.
   */
  noLabel(ask: NormalizedAsk): BerthError {
    const label = ask.label;
    const shapes = this.s.prov?.shapesWithLabel(label) ?? '';
    if (!shapes) {
      return new BerthError(
        'failed_precondition',
        `no machine carries label '${label}' and no provisioner can start one`,
      );
    }
    const asked = describeAmount(amountOf(ask));
    return new BerthError(
      'failed_precondition',
      `no machine carries label '${label}' and no provisioner can start one that holds ${asked} ` +
        `(with that label they start ${shapes})`,
    );
  }

  /**
   * Fails waiters requiring a label whose machines left longer ago than the reconnect grace (or,
   * never seen, once the restart grace is over), and those needing cores no machine has. A timer may fire a
   * little before the grace has passed by the wall clock (the event loop's clock lags); such labels are
   * checked again when their grace ends.
   */
  expire(): void {
    const { queue, machines, prov } = this.s;
    const abandon = (cls: { head?: Parameters<Settler['abandon']>[0] }, err: BerthError) => {
      for (let w = cls.head; w; w = cls.head) this.settler.abandon(w, err);
    };
    let again = Infinity;
    for (const cls of [...queue.classes()]) {
      if (!prov?.covers(cls.ask) && noCores(machines, cls.ask)) {
        // queued within the restart grace for cores no machine has (issue 23 item 7)
        if (this.restartUntil >= Date.now()) again = Math.min(again, this.restartUntil + 1 - Date.now());
        else abandon(cls, noCoresError(machines, cls.ask));
        continue;
      }
      if (!this.labelMissing(cls.ask)) continue;
      const until = this.until(cls.ask.label); // reconnect or restart grace
      if (until >= Date.now()) again = Math.min(again, until + 1 - Date.now());
      else abandon(cls, this.noLabel(cls.ask));
    }
    if (again > 0 && again < Infinity) setTimeout(() => this.expire(), again).unref();
  }
}
