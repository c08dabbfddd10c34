/**
 * EngineKeeper (issue 19 item 5): the engine host's command calls run in a local `berth worker` the server starts
 * (keeper-process.ts), so they outlive the server as any worker's calls do (SPEC S1): held by the agent, output kept
 * in its outbox, re-bound when it re-attaches to the restarted server. Python source calls stay in-process (the warm
 * pools' fast path: through the keeper the one-caller Run rate would halve, measured), unless their Run asked for a
 * disconnect grace. The keeper's stream is admitted by its secret under the engine's name; its machine never joins
 * the books (the engine's are the placer's own). A broken keeper link holds its calls for KEEPER_HOLD_MS (the
 * restart hold after a restart); they fail "went away" at once when no keeper process runs.
 */
import { timingSafeEqual } from 'node:crypto';
import type { CallAck } from '../../generated/ts/berth/v1/worker.js';
import { BerthError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { AttachedWorker, CallSpec } from './attached.js';
import type { CallRecord } from './call-record.js';
import { keeperSecret, liveKeeper, spawnKeeper, type KeeperSpawn } from './keeper-process.js';

/** How long calls are held when the keeper's link breaks while the server runs, in ms. */
export const KEEPER_HOLD_MS = 5000;
/** Longest wait for a started keeper to attach before a call runs in-process instead, in ms. */
export const KEEPER_ATTACH_MS = 15_000;
/** Longest wait for a keeper that outlived the last server to attach before a fresh one is started, in ms. */
export const KEEPER_ADOPT_MS = 3000;

/** Keeper settings: how it is spawned (the address read once the server is bound), and the log. */
export interface KeeperOptions extends Omit<KeeperSpawn, 'server'> {
  server: () => string;
  log: Logger;
}

/** The engine keeper as the hub sees it: its stream, the calls awaiting its return, its process. */
export class EngineKeeper {
  /** The secret the keeper presents (KEEPER_HEADER). */
  readonly secret: string;
  #link?: AttachedWorker;
  /** A stream whose calls await the keeper's return: a lost link's, or the journal's after a restart. */
  #held?: AttachedWorker;
  #holdTimer?: NodeJS.Timeout;
  #starting?: Promise<AttachedWorker | undefined>;
  readonly #waiters = new Set<() => void>();
  #severed = false;

  constructor(readonly o: KeeperOptions) {
    this.secret = keeperSecret(o.dir);
  }

  /** True when `secret` is the keeper's (compared in constant time). */
  admits(secret: unknown): boolean {
    if (typeof secret !== 'string' || !secret) return false;
    const a = Buffer.from(secret);
    const b = Buffer.from(this.secret);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  /** Whether `spec` runs in the keeper: commands, and a call whose Run asked for a disconnect grace. */
  wants(spec: CallSpec): boolean {
    return spec.payload?.$case === 'command' || (spec.disconnectGraceMs ?? 0) > 0;
  }

  /**
   * The keeper's live stream, starting the keeper when no keeper process runs and awaiting its attach (at most
   * KEEPER_ATTACH_MS); undefined when it cannot be had (the call then runs in-process).
   */
  link(): Promise<AttachedWorker | undefined> {
    if (this.#link && !this.#link.gone.signal.aborted) return Promise.resolve(this.#link);
    this.#starting ??= this.#start().finally(() => (this.#starting = undefined));
    return this.#starting;
  }

  async #start(): Promise<AttachedWorker | undefined> {
    // A keeper that outlived the last server dials back within a second; one that does not (it dials another port,
    // or is stuck) is left to its own idle exit and a fresh one is started.
    if (liveKeeper(this.o.dir) !== undefined && (await this.#attached(KEEPER_ADOPT_MS))) return this.#link;
    try {
      const pid = spawnKeeper({ ...this.o, server: this.o.server() }, this.secret);
      this.o.log.info({ pid, dir: this.o.dir }, 'engine keeper started');
    } catch (err) {
      this.o.log.warn({ reason: (err as Error).message }, 'engine keeper not started: calls run in-process');
      return undefined;
    }
    if (await this.#attached(KEEPER_ATTACH_MS)) return this.#link;
    this.o.log.warn({ waitedMs: KEEPER_ATTACH_MS }, 'engine keeper did not attach: the call runs in-process');
    return undefined;
  }

  /** Resolves true once a keeper stream is attached (at once when one is), false after `ms`. */
  async #attached(ms: number): Promise<boolean> {
    const live = () => this.#link !== undefined && !this.#link.gone.signal.aborted;
    if (live()) return true;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((r) => this.#waiters.add(r)),
      new Promise<void>((r) => (timer = setTimeout(r, ms))),
    ]);
    clearTimeout(timer);
    return live();
  }

  /**
   * The keeper attached as `w`: the calls of its previous stream and of a held one that its Hello lists move to `w`
   * (answered in `w.welcomeCalls` with the seq the server has, SPEC S1); the others fail UNAVAILABLE at once.
   */
  attach(w: AttachedWorker): void {
    const listed = new Set(w.agent.heldCalls.map((c) => c.callId));
    const welcome: CallAck[] = [];
    for (const old of [this.#link, this.#held]) {
      if (!old || old === w) continue;
      old.unlink(new BerthError('unavailable', 'the engine keeper attached again'));
      for (const [id, rec] of old.calls) {
        if (rec.ended) rec.markSettled();
        else if (!listed.has(id)) {
          rec.fail(new BerthError('unavailable', `the engine keeper went away: it no longer holds ${id}`));
          rec.markSettled();
        } else {
          w.calls.set(id, rec);
          welcome.push({ callId: id, seq: rec.lastSeq, ended: false });
        }
      }
      old.calls.clear();
      old.successor = w;
    }
    clearTimeout(this.#holdTimer);
    this.#held = undefined;
    w.welcomeCalls = welcome;
    this.#link = w;
    if (this.#severed) w.sever();
    for (const r of this.#waiters) r();
    this.#waiters.clear();
    this.o.log.info({ agent: w.agent.agentId, calls: welcome.length }, 'engine keeper attached');
  }

  /** The keeper's link broke: its calls are held for KEEPER_HOLD_MS (none when no keeper process runs). */
  lost(w: AttachedWorker, why: string): void {
    if (w !== this.#link) return this.leave(w, why);
    this.#link = undefined;
    w.unlink(new BerthError('unavailable', `the engine keeper is disconnected: ${why}`));
    this.hold(w, KEEPER_HOLD_MS, why);
  }

  /** `w`'s stream is over for good (Stopping, a bad frame): its calls fail at once. */
  leave(w: AttachedWorker, why: string): void {
    if (w === this.#link) this.#link = undefined;
    w.leave(new BerthError('unavailable', `the engine keeper went away: ${why}`));
  }

  /**
   * Holds `w`'s calls for `ms` awaiting the keeper (after a restart: the journal's, for the restart hold); they fail
   * when it runs out, or at once when no keeper process runs.
   */
  hold(w: AttachedWorker, ms: number, why: string): void {
    if (this.#held && this.#held !== w) {
      for (const [id, rec] of w.calls) this.#held.calls.set(id, rec);
      w.calls.clear();
      w.successor = this.#held;
    } else this.#held = w;
    const held = this.#held;
    const runOut = (reason: string) => {
      if (this.#held !== held) return;
      this.#held = undefined;
      held.leave(new BerthError('unavailable', `the engine keeper went away: ${reason}`));
    };
    if (liveKeeper(this.o.dir) === undefined) return runOut(`${why}; no keeper process runs`);
    clearTimeout(this.#holdTimer);
    this.#holdTimer = setTimeout(() => runOut(`${why}; its hold of ${ms} ms ran out`), ms);
    this.#holdTimer.unref();
    this.o.log.info({ why, holdMs: ms, calls: held.calls.size }, 'engine keeper disconnected, its calls held');
  }

  /** Calls of the keeper's stream and of a held one (for a drain to stop them). */
  calls(): CallRecord[] {
    return [this.#link, this.#held].flatMap((w) => (w ? [...w.calls.values()] : []));
  }

  /** The server stops without draining (SPEC S5): nothing more is sent to the keeper; its calls run on. */
  sever(): void {
    this.#severed = true;
    this.#link?.sever();
    this.#held?.sever();
  }

  /** SIGKILLs the keeper process now (its watchdogs then SIGKILL its calls' groups); synchronous: second signal. */
  killNow(): void {
    const pid = liveKeeper(this.o.dir);
    if (pid === undefined) return;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}
