/**
 * Held machines (SPEC S2, S6): a worker whose stream broke stays in the books as `disconnected` until its hold
 * runs out. It keeps its books and the claims on it (their `lost` does not fire), is never chosen for a new grant
 * (MachineClass.bestFit skips it), and still counts for clamping, Satisfiable and required labels, so an ask waits
 * for it rather than clamp below it or fail. A reconnect with the same inventory keeps every claim with the same
 * GPU ids; when the hold runs out the machine leaves (its claims are lost) as a detach does. The placer owns one
 * MachineHolds and calls it from `disconnect`, `restoreMachine` and `attach`.
 */
import type { EventBus } from '../events.js';
import type { MachineEntry, MachineSet } from './machines.js';
import type { MachineSpec } from './types.js';

/** What the holds need of the placer. */
export interface HoldHost {
  machines: MachineSet;
  events: EventBus;
  /** `e` was added or came back: refit the waiters and wake those it could serve. */
  changed(e: MachineEntry): void;
  /** The machine leaves with its books (claims lost): the placer's detach. */
  detach(name: string, reason: string): void;
  /** Told when a hold runs out, before the machine leaves (the worker hub fails its calls then). */
  expired?(name: string, reason: string): void;
}

/** The disconnected machines' holds and their timers. */
export class MachineHolds {
  constructor(readonly host: HoldHost) {}

  /**
   * Marks attached worker `name` disconnected until `untilMs` (ms since the epoch). Emits worker_disconnected
   * (durationMs: the hold); called again while held, the hold only moves. @throws Error for an unknown name.
   */
  disconnect(name: string, untilMs: number, why: string): void {
    const e = this.host.machines.get(name);
    if (!e?.spec.remote) throw new Error(`disconnect: no worker ${name} is attached`);
    const first = e.hold === undefined;
    this.#hold(e, untilMs, why);
    if (!first) return;
    const ms = Math.max(0, untilMs - Date.now());
    this.host.events.emit({
      kind: 'worker_disconnected',
      machine: name,
      durationMs: ms,
      detail: `worker ${name} disconnected: ${why}; held for ${ms} ms`,
    });
  }

  /**
   * Adds `spec` straight as disconnected until `untilMs` (a machine the journal knows, after a restart).
   * @throws Error when the name is attached already.
   */
  restore(spec: MachineSpec, untilMs: number): void {
    const e = this.host.machines.add({ ...spec, remote: true });
    this.disconnect(spec.name, untilMs, 'restored after a server restart, waiting for its worker');
    this.host.changed(e);
  }

  /**
   * `spec` attaches under the name of held machine `e`: with the same inventory the hold ends and every claim on
   * it stays (same GPU ids, new labels and version taken) and true is returned; otherwise false (the caller
   * replaces the machine, its claims lost). Emits worker_reconnected (durationMs: time disconnected).
   */
  reconnect(e: MachineEntry, spec: MachineSpec): boolean {
    const hold = e.hold;
    if (!hold || !sameInventory(e.spec, spec)) return false;
    this.clear(e);
    this.host.machines.respec(e, { ...spec, remote: true });
    const away = Date.now() - hold.since;
    this.host.events.emit({
      kind: 'worker_reconnected',
      machine: spec.name,
      durationMs: away,
      detail: `worker ${spec.name} reconnected after ${away} ms; its ${e.books.claims} claim(s) kept`,
    });
    this.host.changed(e);
    return true;
  }

  /** Ends `e`'s hold without a word (it reconnected or left). */
  clear(e: MachineEntry): void {
    if (e.hold?.timer) clearTimeout(e.hold.timer);
    e.hold = undefined;
  }

  #hold(e: MachineEntry, untilMs: number, why: string): void {
    const since = e.hold?.since ?? Date.now();
    this.clear(e);
    const hold: NonNullable<MachineEntry['hold']> = { untilMs, why, since };
    hold.timer = setTimeout(() => this.#expire(e, hold), Math.max(0, untilMs - Date.now()));
    hold.timer.unref();
    e.hold = hold;
  }

  /** The hold ran out: the hub is told, worker_hold_expired emitted, the machine leaves. */
  #expire(e: MachineEntry, hold: NonNullable<MachineEntry['hold']>): void {
    if (e.hold !== hold || this.host.machines.get(e.spec.name) !== e) return;
    const name = e.spec.name;
    const heldMs = Date.now() - hold.since;
    const reason = `worker ${name} went away: ${hold.why}; its hold of ${hold.untilMs - hold.since} ms ran out`;
    this.host.events.emit({ kind: 'worker_hold_expired', machine: name, durationMs: heldMs, detail: reason });
    this.host.expired?.(name, reason);
    if (this.host.machines.get(name) === e) this.host.detach(name, reason); // unless the hub detached it
  }
}

/** Same cores, GPU ids, memory and named resources: a reconnecting worker's claims still fit where they were. */
function sameInventory(a: MachineSpec, b: MachineSpec): boolean {
  const x = a.inventory;
  const y = b.inventory;
  return (
    x.cpus === y.cpus &&
    x.ramMb === y.ramMb &&
    JSON.stringify(x.resources ?? {}) === JSON.stringify(y.resources ?? {}) &&
    x.gpuIds.length === y.gpuIds.length &&
    x.gpuIds.every((id, i) => id === y.gpuIds[i])
  );
}
