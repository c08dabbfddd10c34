/**
 * Fitting an ask to the machines there are (SPEC P5, P11; issue 13): the amount to wait for — the ask itself, or
 * the ask clamped to the best real machine — and re-fitting every wait class when the set of machines changes.
 */
import { describeAmount, type Amount } from '../resources/books.js';
import { amountOf, anyCanEverHold, clampTarget } from './choose.js';
import type { LabelGrace } from './grace.js';
import type { MachineEntry } from './machines.js';
import { limitingDimension, noCoresError, oversizeError } from './oversize.js';
import type { Settler } from './settle.js';
import type { PlacerState } from './state.js';
import type { NormalizedAsk } from './types.js';
import type { WaitClass } from './waiting.js';

/** What an ask waits for: the amount, whether it was clamped, and (clamped) the machine it was cut to. */
export interface Fit {
  amount: Amount;
  clamped: boolean;
  best?: MachineEntry;
}

const sameNamed = (x: Amount['res'], y: Amount['res']) =>
  x === y ||
  (!!x && !!y && Object.keys(x).length === Object.keys(y).length && Object.keys(x).every((k) => x[k] === y[k]));
const same = (x: Amount, y: Amount) =>
  x.cpus === y.cpus &&
  x.gpus === y.gpus &&
  x.ramMb === y.ramMb &&
  x.share === y.share &&
  x.gpuType === y.gpuType &&
  sameNamed(x.res, y.res);

/** Fits asks and re-fits the waiting classes. */
export class Refitter {
  constructor(
    readonly s: PlacerState,
    readonly settler: Settler,
    readonly grace: LabelGrace,
  ) {}

  /**
   * The amount to wait for: the ask when some machine could ever hold it, when a provisioner covers it (P10; the
   * provisioning loop plans a machine) or when no machine is eligible (a required label within its grace, P3); else
   * clamped to the best real machine (P5), emitting node_clamped when `announce`.
   * @throws BerthError FAILED_PRECONDITION when it would be clamped but asks `on_oversize: fail` (issue 13), or
   *   (with `announce`) when it needs cores no machine has (issue 23 item 7).
   */
  fit(ask: NormalizedAsk, announce: boolean): Fit {
    const amount = amountOf(ask);
    if (anyCanEverHold(this.s.machines, ask, amount)) return { amount, clamped: false };
    if (this.s.prov?.covers(ask)) return { amount, clamped: false }; // the provisioning loop plans it
    const t = clampTarget(this.s.machines, ask);
    if (!t) {
      // No cores anywhere (issue 23 item 7): FAILED_PRECONDITION once the restart grace is over, else wait.
      if (announce && this.grace.coresNowhere(ask)) throw noCoresError(this.s.machines, ask);
      return { amount, clamped: false }; // no eligible machine: a required label within its grace (P3) — wait
    }
    if (ask.onOversize === 'fail') throw oversizeError(amount, t); // loud clamping (issue 13)
    if (announce) this.clampedEvent(ask, t.amount, t.machine);
    return { amount: t.amount, clamped: true, best: t.machine };
  }

  /** Emits node_clamped: `ask` was cut to `to` on `m`. */
  clampedEvent(ask: NormalizedAsk, to: Amount, m: MachineEntry): void {
    const asked = amountOf(ask);
    this.s.events.emit({
      kind: 'node_clamped',
      node: ask.node,
      runId: ask.runId,
      machine: m.spec.name,
      label: ask.label || undefined,
      asked,
      granted: to,
      clamped: true,
      limiting: limitingDimension(asked, to),
      detail: `${describeAmount(asked)} → ${describeAmount(to)} (best machine: ${m.spec.name})`,
    });
  }

  /**
   * The set of machines changed: every class's verdict is fitted again, both ways (P11) — a
   * clamped class gets its whole ask once a machine could hold it, and one whose only fitting
   * machine left is clamped again. A class whose amount changed, or that had no target, re-chooses
   * its target and wakes. Cost: per wait class, per machine class.
   */
  refit(): void {
    const failed: [WaitClass, unknown][] = [];
    for (const cls of this.s.queue.classes()) {
      let f: Fit;
      try {
        f = this.fit(cls.ask, false);
      } catch (err) {
        failed.push([cls, err]); // on_oversize fail and its only fitting machine left (P11, issue 13)
        continue;
      }
      if (cls.target && same(f.amount, cls.amount)) continue;
      if (!same(f.amount, cls.amount)) {
        this.s.queue.setAmount(cls, f.amount, f.clamped);
        cls.pinned = false; // a preemptor's machine was chosen for the old amount (SPEC Q2): it re-chooses
        if (cls.ask.owner !== undefined) this.s.quotaDirty.add(cls.ask.owner); // its quota verdict may change (Q3)
        if (f.best) for (let w = cls.head; w; w = w.next) this.clampedEvent(w.ask, f.amount, f.best);
      }
      this.settler.retarget(cls);
      this.s.woken.add(cls);
    }
    for (const [cls, err] of failed) for (let w = cls.head; w; w = cls.head) this.settler.abandon(w, err);
  }
}
