/**
 * LinkHolds: workers whose stream broke without a Stopping, held by the server (SPEC S2). The machine stays in the
 * books as disconnected (Placer.disconnect) with what its calls and claims hold; each call is held for its Run's
 * `disconnect_grace_ms`, or the server's `--worker-hold` when that is 0, and fails UNAVAILABLE "worker <name> went
 * away: ..." when its own hold runs out; the machine leaves when the longest hold does (with no calls: after the
 * worker hold). Callers are told at once (WorkerLink DISCONNECTED with the hold left) and again when the same agent
 * instance re-attaches (RECONNECTED): then the calls it still holds are re-bound to the new stream and answered in
 * Welcome.calls, the rest fail at once.
 */
import { WorkerLinkState } from '../../generated/ts/berth/v1/placement.js';
import type { CallAck } from '../../generated/ts/berth/v1/worker.js';
import { BerthError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { Placer } from '../placement/placer.js';
import type { AttachedWorker } from './attached.js';

/** One held worker: why its link broke, since when (ms since the epoch), its calls' hold timers. */
interface Held {
  why: string;
  since: number;
  untilMs: number;
  timers: ReturnType<typeof setTimeout>[];
}

/** The held workers of one hub. */
export class LinkHolds {
  readonly #held = new Map<AttachedWorker, Held>();

  /** @param workerHoldMs the server's `--worker-hold` in ms: the hold of a call that asked none. */
  constructor(
    readonly placer: Placer,
    readonly log: Logger,
    readonly workerHoldMs: number,
  ) {}

  /** True while `w` is held (its link broke, its holds run). */
  has(w: AttachedWorker): boolean {
    return this.#held.has(w);
  }

  /** Ms left of `w`'s hold (0 when not held). */
  leftMs(w: AttachedWorker): number {
    const h = this.#held.get(w);
    return h ? Math.max(0, h.untilMs - Date.now()) : 0;
  }

  /**
   * `w`'s link broke (`why`): nothing new goes to it, each call is held for its own hold, the machine is
   * disconnected until the longest one runs out, and every caller gets DISCONNECTED with its hold left.
   */
  hold(w: AttachedWorker, why: string): void {
    if (this.#held.has(w)) return;
    const now = Date.now();
    w.unlink(new BerthError('unavailable', `worker ${w.name} is disconnected: ${why}`));
    const held: Held = { why, since: now, untilMs: 0, timers: [] };
    let longest = w.calls.size ? 0 : this.workerHoldMs;
    for (const rec of w.calls.values()) {
      const ms = rec.holdMs || this.workerHoldMs;
      longest = Math.max(longest, ms);
      rec.link({
        state: WorkerLinkState.WORKER_LINK_STATE_DISCONNECTED,
        machine: w.name,
        holdLeftMs: ms,
        detail: `worker ${w.name} disconnected: ${why}; holding the call for ${ms} ms`,
      });
      const t = setTimeout(() => {
        if (w.calls.get(rec.callId) === rec && this.#held.has(w)) this.#runOut(w, rec.callId);
      }, ms);
      t.unref();
      held.timers.push(t);
    }
    held.untilMs = now + longest;
    this.#held.set(w, held);
    this.placer.disconnect(w.name, held.untilMs, why);
    this.log.info({ worker: w.name, why, holdMs: longest, calls: w.calls.size }, 'worker disconnected, held');
  }

  /**
   * The same agent instance re-attached as `neu` (SPEC S2): `old`'s calls listed in the Hello's held_calls move to
   * `neu` (answered in `neu.welcomeCalls` with the seq the server has), those not listed fail at once "went away:
   * the agent no longer holds it", those that ended here meanwhile (cancelled) are settled: the agent stops them.
   * `old` must be held. Callers of the moved calls get RECONNECTED.
   */
  resume(old: AttachedWorker, neu: AttachedWorker): void {
    const held = this.#held.get(old);
    if (!held) throw new Error(`resume: worker ${old.name} is not held`);
    this.#drop(old, held);
    const listed = new Set(neu.agent.heldCalls.map((c) => c.callId));
    const welcome: CallAck[] = [];
    const away = Date.now() - held.since;
    for (const [id, rec] of old.calls) {
      if (rec.ended) {
        rec.markSettled();
      } else if (!listed.has(id)) {
        rec.fail(new BerthError('unavailable', `worker ${old.name} went away: the agent no longer holds it`));
        rec.markSettled();
      } else {
        neu.calls.set(id, rec);
        welcome.push({ callId: id, seq: rec.lastSeq, ended: false });
        rec.link({
          state: WorkerLinkState.WORKER_LINK_STATE_RECONNECTED,
          machine: old.name,
          holdLeftMs: 0,
          detail: `worker ${old.name} reconnected after ${away} ms`,
        });
      }
    }
    old.calls.clear();
    neu.slots = old.slots;
    neu.welcomeCalls = welcome;
    old.successor = neu;
    this.log.info({ worker: old.name, awayMs: away, calls: welcome.length }, 'worker reconnected');
  }

  /**
   * `w`'s machine hold ran out (the placer's timer): every call still held fails as its own hold would have;
   * `w` is no longer held.
   */
  expire(w: AttachedWorker): void {
    if (!this.#held.has(w)) return;
    for (const id of [...w.calls.keys()]) this.#runOut(w, id);
    this.forget(w);
  }

  /** Call `id`'s hold ran out: it fails UNAVAILABLE "went away" saying so, and is settled. */
  #runOut(w: AttachedWorker, id: string): void {
    const rec = w.calls.get(id)!;
    const why = this.#held.get(w)!.why;
    const ms = rec.holdMs || this.workerHoldMs;
    rec.fail(new BerthError('unavailable', `worker ${w.name} went away: ${why}; its hold of ${ms} ms ran out`));
    rec.markSettled();
    w.calls.delete(id);
  }

  /**
   * Moves held `w`'s hold and every call's to `untilMs` (ms since the epoch), now held because `why` (no mass
   * expiry after a takeover, SPEC S7). No-op when `w` is not held.
   */
  extend(w: AttachedWorker, untilMs: number, why: string): void {
    const held = this.#held.get(w);
    if (!held) return;
    for (const t of held.timers) clearTimeout(t);
    held.timers = [];
    held.why = why;
    held.untilMs = untilMs;
    for (const rec of w.calls.values()) {
      const t = setTimeout(
        () => {
          if (w.calls.get(rec.callId) === rec && this.#held.get(w) === held) this.#runOut(w, rec.callId);
        },
        Math.max(0, untilMs - Date.now()),
      );
      t.unref();
      held.timers.push(t);
    }
    this.placer.disconnect(w.name, untilMs, why);
  }

  /** Ends `w`'s hold without failing anything (it is replaced or leaves; the caller fails its calls). */
  forget(w: AttachedWorker): void {
    const held = this.#held.get(w);
    if (held) this.#drop(w, held);
  }

  #drop(w: AttachedWorker, held: Held): void {
    for (const t of held.timers) clearTimeout(t);
    this.#held.delete(w);
  }
}
