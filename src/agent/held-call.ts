/**
 * HeldCall: one call the agent runs, owned by the agent rather than by a stream (SPEC S1). Its events
 * are numbered (Event.seq from 1) into its Outbox and handed, in order, to whichever stream is linked
 * now; with none linked it keeps running for its disconnect grace, then stops (SIGTERM, then SIGKILL
 * after the grace) and keeps a Failure "WorkerLost" as its ending. It is the executors' Flow: full while
 * the outbox is at its cap, or while HIGH lines wait for a linked stream that is slow (the node pauses).
 */
import type { Call } from '../../generated/ts/berth/v1/worker.js';
import { BerthError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { EventBatcher } from '../workers/event-batcher.js';
import type { ExecEvent, Executors, Flow } from '../workers/executors/index.js';
import { toFailure, toTask, toTerminal } from '../workers/task.js';
import { type FrameWriter, HIGH, LOW } from './frame-writer.js';
import { eventLines, Outbox, type OutboxBounds, type Terminal } from './outbox.js';

/** What a held call needs from the agent. Units: ms. */
export interface HeldCallDeps {
  executors: Executors;
  log: Logger;
  /** The agent's `--disconnect-grace`; the call is kept max(this, Call.disconnect_grace_ms). */
  disconnectGraceMs: number;
  outbox: OutboxBounds;
  /** This call's spill directory (undefined: memory only). */
  spillDir?: string;
  /** Resolves when the calls stopped at the last Welcome are gone: this call starts after. */
  settled: Promise<void>;
  /** Told after each round of frames handed to the link. */
  onSent?: (c: HeldCall) => void;
}

/** One running or ended call and its unacknowledged frames. */
export class HeldCall implements Flow {
  readonly id: string;
  readonly outbox: Outbox;
  /** Resolves once the process is gone and the ending is in the outbox. */
  readonly done: Promise<void>;
  running = true;
  readonly #abort = new AbortController();
  readonly #graceMs: number;
  #link?: FrameWriter;
  /** Seq of the newest event handed to the link; the terminal too when #terminalSent. */
  #sent = 0;
  #terminalSent = false;
  /** Output lines of the events after #sent. */
  #unsent = 0;
  #pumping = false;
  /** The Failure type of the ending when stopped by the agent itself (e.g. WorkerLost). */
  #endType?: string;
  #grace?: NodeJS.Timeout;
  readonly #roomWaiters = new Set<() => void>();

  constructor(
    call: Call,
    readonly deps: HeldCallDeps,
  ) {
    this.id = call.callId;
    this.#graceMs = Math.max(deps.disconnectGraceMs, call.disconnectGraceMs);
    this.outbox = new Outbox(deps.outbox, deps.spillDir, (err) =>
      deps.log.warn({ call: this.id, reason: err.message }, 'cannot spill call output to disk; keeping it in memory'),
    );
    this.done = this.#run(call);
  }

  /** Ended: the process is gone and its ending waits in the outbox. */
  get ended(): boolean {
    return this.outbox.terminal !== undefined;
  }

  /** Seq of the newest event handed to the linked stream. */
  get sentSeq(): number {
    return this.#sent;
  }

  /** True once the ending was handed to the linked stream. */
  get endingSent(): boolean {
    return this.#terminalSent;
  }

  /** True when every frame is handed to the linked stream (or none is linked). */
  get flushed(): boolean {
    const l = this.#link;
    return !l || l.closed || (this.#sent === this.outbox.last && (!this.ended || this.#terminalSent));
  }

  /**
   * Links stream `link`, the server having every event up to `serverSeq` (0 for a new call): those
   * are dropped, the rest is sent from serverSeq+1 and then the ending — acknowledged ones too when the
   * server lost them (a restart) and they are still kept (Outbox.rewind). Clears the disconnect grace.
   */
  attach(link: FrameWriter, serverSeq: number): void {
    clearTimeout(this.#grace);
    this.#grace = undefined;
    if (serverSeq < this.outbox.acked) {
      const acked = this.outbox.acked;
      if (this.outbox.rewind(serverSeq)) this.deps.log.info({ call: this.id, serverSeq, acked }, 'resending events');
      else this.deps.log.warn({ call: this.id, serverSeq, acked }, 'the server lost acknowledged events');
    }
    this.outbox.ack(serverSeq);
    this.#link = link;
    this.#sent = Math.min(Math.max(serverSeq, this.outbox.acked), this.outbox.last);
    this.#terminalSent = false;
    this.#unsent = this.outbox.linesAfter(this.#sent);
    void this.#pump();
    this.#wake();
  }

  /** The stream is gone: keep running for the disconnect grace, then stop and keep a WorkerLost ending. */
  detach(): void {
    this.#link = undefined;
    this.#wake();
    if (!this.running || this.#grace) return;
    this.#grace = setTimeout(() => {
      this.deps.log.warn({ call: this.id, graceMs: this.#graceMs }, 'disconnect grace ran out; stopping the call');
      const why = `the server was unreachable for the disconnect grace (${this.#graceMs} ms)`;
      this.stop(new BerthError('unavailable', why), 'WorkerLost');
    }, this.#graceMs);
  }

  /** The server has every event up to `seq`: drop them. */
  ack(seq: number): void {
    this.outbox.ack(Math.min(seq, this.#sent));
    this.#wake();
  }

  /**
   * Stops the process (SIGTERM, then SIGKILL after the executors' grace); the ending's Failure says `reason`,
   * with type `type` (default from the reason's kind: Cancelled, InvalidCall or WorkerError).
   */
  stop(reason: BerthError, type?: string): void {
    if (this.#abort.signal.aborted) return;
    this.#endType = type;
    this.#abort.abort(reason);
  }

  /** Drops the outbox and its files and the grace timer (the call is forgotten; a running one must be stopped). */
  forget(): void {
    clearTimeout(this.#grace);
    this.#link = undefined;
    this.outbox.close();
    this.#wake();
  }

  /** Flow: full while the outbox is at its cap or HIGH lines wait for a linked stream. */
  full(): boolean {
    return this.outbox.atCap() || (this.#link !== undefined && !this.#link.closed && this.#unsent >= HIGH);
  }

  /** Flow: resolves once below the cap and at most LOW lines wait (or no stream is linked). */
  room(): Promise<void> {
    if (this.#hasRoom()) return Promise.resolve();
    return new Promise((resolve) => this.#roomWaiters.add(resolve));
  }

  #hasRoom(): boolean {
    return !this.outbox.atCap() && (!this.#link || this.#link.closed || this.#unsent <= LOW);
  }

  #wake(): void {
    if (this.#roomWaiters.size === 0 || !this.#hasRoom()) return;
    for (const w of [...this.#roomWaiters]) w();
    this.#roomWaiters.clear();
  }

  async #run(call: Call): Promise<void> {
    const id = this.id;
    const batch = new EventBatcher(id, (ev) => {
      this.outbox.push(ev);
      this.#unsent += eventLines(ev);
      void this.#pump();
    });
    try {
      await this.deps.settled;
      if (this.#abort.signal.aborted) throw this.#abort.signal.reason;
      const task = toTask(id, call.allocation, call.payload);
      const signal = this.#abort.signal;
      const outcome = await this.deps.executors.run(task, (e: ExecEvent) => batch.push(e), signal, this);
      batch.close(); // every line before the result
      this.#end(toTerminal(id, outcome));
      this.deps.log.debug({ call: id, ok: outcome.ok }, 'call finished');
    } catch (err) {
      batch.close();
      const e = err instanceof BerthError ? err : new BerthError('unavailable', String(err));
      const type = this.#endType
        ? this.#endType
        : e.kind === 'cancelled'
          ? 'Cancelled'
          : e.kind === 'invalid_argument'
            ? 'InvalidCall'
            : 'WorkerError';
      this.#end({ $case: 'failure', value: toFailure(id, { type, message: e.message, traceback: '' }) });
      this.deps.log.info({ call: id, reason: e.message }, 'call stopped');
    }
  }

  #end(terminal: Terminal): void {
    this.running = false;
    clearTimeout(this.#grace);
    this.#grace = undefined;
    this.outbox.terminal = terminal;
    void this.#pump();
  }

  /** Hands the link every frame after #sent, in order, while it has room. */
  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      for (;;) {
        const link = this.#link;
        if (!link || link.closed) return;
        if (this.#sent < this.outbox.last) {
          if (link.full()) {
            await link.room();
            continue;
          }
          const ev = this.outbox.event(this.#sent + 1);
          void link.send({ $case: 'event', value: ev });
          this.#sent++;
          this.#unsent -= eventLines(ev);
          this.#wake();
        } else if (this.outbox.terminal && !this.#terminalSent) {
          this.#terminalSent = true;
          void link.send(this.outbox.terminal);
        } else return;
      }
    } finally {
      this.#pumping = false;
      this.deps.onSent?.(this);
    }
  }
}
