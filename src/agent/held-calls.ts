/**
 * HeldCalls: the agent's calls, across its streams (SPEC S1). A dropped stream no longer stops them:
 * each keeps running for its disconnect grace (held-call.ts) while the agent reconnects; the next Hello
 * lists them (`held()`), and the Welcome says which the server still knows — those are resent from
 * where the server is, every other one is stopped without a report (`attach`). Ack frames trim the
 * outboxes; an acknowledged ending forgets the call. Frames of a stream that is no longer the linked
 * one are ignored.
 */
import { join } from 'node:path';
import type { Call, CallAck, HeldCall as HeldCallWire } from '../../generated/ts/berth/v1/worker.js';
import { BerthError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { Executors } from '../workers/executors/index.js';
import type { FrameWriter } from './frame-writer.js';
import { HeldCall } from './held-call.js';
import type { OutboxBounds } from './outbox.js';

/**
 * No Ack on a stream within this long of a call's ending reaching it, in ms: the server is older than the
 * survival rules (it acknowledges nothing), and the agent drops each frame of that stream once sent.
 */
export const LEGACY_AFTER_MS = 5000;

/** What the registry needs. Units: ms. */
export interface HeldCallsOptions {
  executors: Executors;
  log: Logger;
  disconnectGraceMs: number;
  outbox: OutboxBounds;
  /** Directory under which each call spills to its own subdirectory (undefined: memory only). */
  spillRoot: () => string | undefined;
}

/** A call's outbox figures (for status and tests). */
export interface CallStats {
  running: boolean;
  lastSeq: number;
  ackedSeq: number;
  memoryBytes: number;
  spilledBytes: number;
  paused: boolean;
}

/** The agent-level registry of calls. */
export class HeldCalls {
  readonly #calls = new Map<string, HeldCall>();
  #link?: FrameWriter;
  /** Calls stopped at the last Welcome: new calls start once these processes are gone (SPEC R5). */
  #settled: Promise<void> = Promise.resolve();
  #spills = 0;
  /** An Ack came on the linked stream; #legacy: none came (see LEGACY_AFTER_MS). */
  #acking = false;
  #legacy = false;
  #legacyTimer?: NodeJS.Timeout;

  constructor(readonly o: HeldCallsOptions) {}

  /** Calls whose process runs now. */
  get running(): number {
    let n = 0;
    for (const c of this.#calls.values()) if (c.running) n++;
    return n;
  }

  /** Calls held (running, or ended with the ending not acknowledged). */
  get size(): number {
    return this.#calls.size;
  }

  /** Ids of the calls whose process runs (each gets a heartbeat). */
  runningIds(): string[] {
    return [...this.#calls.values()].filter((c) => c.running).map((c) => c.id);
  }

  /** What the next Hello says it holds: each call's newest seq and whether it ended. */
  held(): HeldCallWire[] {
    return [...this.#calls.values()].map((c) => ({ callId: c.id, lastSeq: c.outbox.last, ended: c.ended }));
  }

  /** Figures of call `id`, or undefined when not held. */
  stats(id: string): CallStats | undefined {
    const c = this.#calls.get(id);
    if (!c) return undefined;
    const u = c.outbox.usage;
    const { last: lastSeq, acked: ackedSeq } = c.outbox;
    return { running: c.running, lastSeq, ackedSeq, ...u, paused: c.full() };
  }

  /**
   * Stream `link` was welcomed: of the held calls, those in `listed` are linked to it from the seq the
   * server has (an ended one it already has the ending of is forgotten); the others are stopped and
   * forgotten without a report. Later calls start once those processes are gone.
   */
  attach(link: FrameWriter, listed: CallAck[]): void {
    this.#link = link;
    this.#acking = listed.length > 0;
    this.#legacy = false;
    clearTimeout(this.#legacyTimer);
    this.#legacyTimer = undefined;
    const known = new Map(listed.map((a) => [a.callId, a]));
    const stopping: Promise<void>[] = [];
    for (const c of [...this.#calls.values()]) {
      const a = known.get(c.id);
      if (a && !a.ended) {
        c.attach(link, a.seq);
        continue;
      }
      this.#calls.delete(c.id);
      if (c.running) {
        this.o.log.info(
          { call: c.id },
          a ? "the server has this call's ending; stopping it" : 'the server no longer knows this call; stopping it',
        );
        c.stop(new BerthError('cancelled', 'the server no longer knows this call'));
        stopping.push(c.done.then(() => c.forget()));
      } else c.forget();
    }
    if (stopping.length) this.#settled = Promise.all([this.#settled, ...stopping]).then(() => undefined);
  }

  /** Stream `link` is gone (ignored when another one is linked): calls run on for their disconnect grace. */
  detach(link: FrameWriter): void {
    if (this.#link !== link) return;
    this.#link = undefined;
    clearTimeout(this.#legacyTimer);
    this.#legacyTimer = undefined;
    for (const c of this.#calls.values()) c.detach();
  }

  /**
   * Starts `call` from stream `link`; ignored from a stream not linked, or while a call of that id runs (it runs
   * once). A held call of that id that has ended is forgotten: the server sending it again is done with it.
   */
  start(link: FrameWriter, call: Call): void {
    const id = call.callId;
    const old = this.#calls.get(id);
    if (link !== this.#link || !id || old?.running) return;
    old?.forget();
    const root = this.o.spillRoot();
    const c = new HeldCall(call, {
      ...this.o,
      spillDir: root ? join(root, `call-${++this.#spills}`) : undefined,
      settled: this.#settled,
      onSent: (held) => this.#sent(held),
    });
    this.#calls.set(id, c);
    this.o.log.debug({ call: id }, 'call started'); // per call: debug, as the server's call decisions (issue 11)
    c.attach(link, 0);
  }

  /** Stops call `id` (a CancelCall); its Failure says `reason`. */
  cancel(id: string, reason: BerthError): void {
    const c = this.#calls.get(id);
    if (c?.running) c.stop(reason);
  }

  /** Ack frame from `link`: trims each call's outbox; an acknowledged ending forgets the call. */
  ack(link: FrameWriter, acks: CallAck[]): void {
    if (link !== this.#link) return;
    this.#acking = true;
    clearTimeout(this.#legacyTimer);
    this.#legacyTimer = undefined;
    for (const a of acks) {
      const c = this.#calls.get(a.callId);
      if (!c) continue;
      c.ack(a.seq);
      if (a.ended && c.ended && c.flushed) {
        this.#calls.delete(c.id);
        c.forget();
      }
    }
  }

  /**
   * After frames of `c` went out: on a stream whose server acknowledges nothing they count as acknowledged
   * (an ended call is forgotten); an ending sent on a stream with no Ack yet arms the LEGACY_AFTER_MS check.
   */
  #sent(c: HeldCall): void {
    const link = this.#link;
    if (!link || this.#acking) return;
    if (this.#legacy) {
      c.ack(c.sentSeq);
      if (c.ended && c.flushed && this.#calls.get(c.id) === c) {
        this.#calls.delete(c.id);
        c.forget();
      }
      return;
    }
    if (!c.endingSent || this.#legacyTimer) return;
    this.#legacyTimer = setTimeout(() => {
      this.#legacyTimer = undefined;
      if (this.#link !== link || this.#acking) return;
      this.#legacy = true;
      this.o.log.warn(
        { afterMs: LEGACY_AFTER_MS },
        'the server acknowledges no call events (older than the survival rules): frames are dropped once sent',
      );
      for (const held of [...this.#calls.values()]) this.#sent(held);
    }, LEGACY_AFTER_MS);
  }

  /** Stops every running call with `reason` (Failure type `type`); resolves when their processes are gone. */
  async stopAll(reason: BerthError, type?: string): Promise<void> {
    const all = [...this.#calls.values()];
    for (const c of all) if (c.running) c.stop(reason, type);
    await Promise.all(all.map((c) => c.done));
  }

  /** Resolves once every call's frames are handed to the linked stream, or after `ms`. */
  async flushed(ms: number): Promise<void> {
    const end = Date.now() + ms;
    while ([...this.#calls.values()].some((c) => !c.flushed) && Date.now() < end)
      await new Promise((r) => setTimeout(r, 10));
  }

  /** Forgets every call (their spill files go); running ones must have been stopped. */
  close(): void {
    for (const c of this.#calls.values()) c.forget();
    this.#calls.clear();
  }
}
