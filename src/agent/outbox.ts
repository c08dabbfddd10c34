/**
 * Outbox: one call's frames the server has not acknowledged yet (SPEC S1) — its events with seq above
 * the acknowledged one, and its terminal. Events are kept in memory up to `memoryBytes`, then spilled
 * to segment files under `spillDir` up to `spillBytes` on disk; past that the outbox is at its cap and
 * the call's Flow reports full (the node is paused, nothing is dropped). An acknowledgement trims it;
 * a segment file is deleted once none of its events is left. The newest acknowledged events are kept in
 * memory up to `retainBytes`: a server that crashed after acknowledging them, before its caller got them,
 * is sent them again after its restart (`rewind`), so the caller following the call again loses none.
 */
import { closeSync, mkdirSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { Event } from '../../generated/ts/berth/v1/calls.js';
import type { WorkerStreamRequest } from '../../generated/ts/berth/v1/worker.js';

/** A call's terminal frame (Result or Failure). */
export type Terminal = Extract<NonNullable<WorkerStreamRequest['frame']>, { $case: 'result' | 'failure' }>;

/** Bounds of one call's outbox, in bytes (memory by estimate, disk as written). */
export interface OutboxBounds {
  memoryBytes: number;
  spillBytes: number;
  /** Acknowledged events kept for a server that lost them (a crash, SPEC S4); default 1 MiB. */
  retainBytes?: number;
}

/** Defaults: 8 MiB of events in memory, then up to 1 GiB on disk, per call; 1 MiB of acknowledged ones kept. */
export const DEFAULT_OUTBOX: OutboxBounds = { memoryBytes: 8 << 20, spillBytes: 1 << 30, retainBytes: 1 << 20 };

interface Segment {
  path: string;
  fd: number;
  size: number;
  /** Events of this segment not yet acknowledged. */
  live: number;
}

interface Entry {
  lines: number;
  bytes: number;
  ev?: Event;
  seg?: Segment;
  offset: number;
  length: number;
}

/** Output lines of an event (1 for a metric or a lone line): the weight FrameWriter counts. */
export function eventLines(ev: Event): number {
  return ev.kind?.$case === 'logs' ? Math.max(1, ev.kind.value.lines.length) : 1;
}

/** What an event costs in memory, roughly: its text plus a fixed overhead per line. */
function estimate(ev: Event): number {
  const k = ev.kind;
  if (k?.$case === 'logs') return k.value.lines.reduce((n, l) => n + l.length + 16, 64);
  if (k?.$case === 'log') return k.value.line.length + 64;
  return (k?.value.name.length ?? 0) + 64;
}

/** One call's unacknowledged frames, in seq order. */
export class Outbox {
  /** Events seq base+1 .. base+entries.length (head entries before #head are trimmed). */
  readonly #entries: Entry[] = [];
  #head = 0;
  #base = 0;
  #memory = 0;
  #onDisk = 0;
  #segments = 0;
  #current?: Segment;
  #spillBroken = false;
  /** Acknowledged events kept (seq order, ending at #base), and their estimated bytes. */
  #retained: { ev: Event; bytes: number; lines: number }[] = [];
  #retainedHead = 0;
  #retainedBytes = 0;
  terminal?: Terminal;

  /**
   * @param spillDir directory for this call's segment files (created when first needed); undefined: memory only,
   *   and the cap is the memory bound
   * @param onSpillError told once when spilling fails (then memory only)
   */
  constructor(
    readonly bounds: OutboxBounds,
    readonly spillDir: string | undefined,
    readonly onSpillError: (err: Error) => void = () => undefined,
  ) {}

  /** Seq of the newest event (0 before the first). */
  get last(): number {
    return this.#base + this.#entries.length - this.#head;
  }

  /** Seq up to which everything is acknowledged (and dropped). */
  get acked(): number {
    return this.#base;
  }

  /** Estimated bytes of events held in memory, and bytes of segment files on disk. */
  get usage(): { memoryBytes: number; spilledBytes: number } {
    return { memoryBytes: this.#memory, spilledBytes: this.#onDisk };
  }

  /** Numbers `ev` with the next seq (from 1) and keeps it; always accepts (the cap only pauses the producer). */
  push(ev: Event): Event {
    ev.seq = this.last + 1;
    const bytes = estimate(ev);
    const e: Entry = { lines: eventLines(ev), bytes, offset: 0, length: 0 };
    if (this.#memory + bytes <= this.bounds.memoryBytes || !this.#spill(ev, e)) {
      e.ev = ev;
      this.#memory += bytes;
    }
    this.#entries.push(e);
    return ev;
  }

  /** The event numbered `seq` (acked < seq <= last), read back from disk when it was spilled. */
  event(seq: number): Event {
    const e = this.#entries[this.#head + seq - this.#base - 1];
    if (!e) throw new RangeError(`event ${seq} is not in the outbox (${this.#base + 1}..${this.last})`);
    if (e.ev) return e.ev;
    const buf = Buffer.allocUnsafe(e.length);
    readSync(e.seg!.fd, buf, 0, e.length, e.offset);
    return Event.decode(buf);
  }

  /** Output lines of the events after `seq`. */
  linesAfter(seq: number): number {
    let n = 0;
    for (let i = this.#head + Math.max(0, seq - this.#base); i < this.#entries.length; i++) n += this.#entries[i].lines;
    return n;
  }

  /** True when nothing more fits — the spill files reached their cap (memory, with none): the producer must pause. */
  atCap(): boolean {
    if (this.spillDir && !this.#spillBroken) return this.#onDisk >= this.bounds.spillBytes;
    return this.#memory >= this.bounds.memoryBytes;
  }

  /** Drops every event up to `seq` (the server has them). */
  ack(seq: number): void {
    const upTo = Math.min(seq, this.last);
    const retain = this.bounds.retainBytes ?? 0;
    while (this.#base < upTo) {
      const ev = retain > 0 ? this.event(this.#base + 1) : undefined;
      const e = this.#entries[this.#head++];
      this.#base++;
      if (e.ev) this.#memory -= e.bytes;
      else if (e.seg && --e.seg.live === 0) this.#drop(e.seg);
      if (ev) {
        this.#retained.push({ ev, bytes: e.bytes, lines: e.lines });
        this.#retainedBytes += e.bytes;
      }
    }
    while (this.#retainedBytes > retain && this.#retainedHead < this.#retained.length)
      this.#retainedBytes -= this.#retained[this.#retainedHead++].bytes;
    if (this.#retainedHead > 1024 && this.#retainedHead * 2 > this.#retained.length) {
      this.#retained.splice(0, this.#retainedHead);
      this.#retainedHead = 0;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#entries.length) {
      this.#entries.splice(0, this.#head);
      this.#head = 0;
    }
  }

  /**
   * The server has only the events up to `seq` (< acked: it lost acknowledged ones in a crash): puts the kept
   * acknowledged events after `seq` back, to be sent again. False, changing nothing, when they are no longer kept.
   */
  rewind(seq: number): boolean {
    const from = this.#retained.findIndex((r, i) => i >= this.#retainedHead && r.ev.seq === seq + 1);
    if (seq >= this.#base || from < 0) return false;
    const back = this.#retained.splice(from);
    this.#entries.splice(0, this.#head, ...back.map((r) => ({ ...r, offset: 0, length: 0 })));
    this.#head = 0;
    this.#base = seq;
    for (const r of back) {
      this.#retainedBytes -= r.bytes;
      this.#memory += r.bytes;
    }
    return true;
  }

  /** Deletes the segment files (the call is forgotten). */
  close(): void {
    const segs = new Set(this.#entries.slice(this.#head).flatMap((e) => (e.seg ? [e.seg] : [])));
    if (this.#current) segs.add(this.#current);
    for (const s of segs) this.#drop(s);
    if (this.spillDir && this.#segments > 0) rmSync(this.spillDir, { recursive: true, force: true });
    this.#entries.length = 0;
    this.#head = 0;
    this.#memory = 0;
  }

  /** Appends `ev` to the current segment; false when it cannot (then it stays in memory). */
  #spill(ev: Event, e: Entry): boolean {
    if (!this.spillDir || this.#spillBroken) return false;
    try {
      const bytes = Event.encode(ev).finish();
      const segBytes = Math.max(64 << 10, Math.min(8 << 20, Math.floor(this.bounds.spillBytes / 8)));
      if (!this.#current || this.#current.size >= segBytes) {
        mkdirSync(this.spillDir, { recursive: true, mode: 0o700 });
        const path = join(this.spillDir, `segment-${++this.#segments}`);
        this.#current = { path, fd: openSync(path, 'w+', 0o600), size: 0, live: 0 };
      }
      const seg = this.#current;
      writeSync(seg.fd, bytes, 0, bytes.length, seg.size);
      Object.assign(e, { seg, offset: seg.size, length: bytes.length });
      seg.size += bytes.length;
      seg.live++;
      this.#onDisk += bytes.length;
      return true;
    } catch (err) {
      this.#spillBroken = true;
      this.onSpillError(err as Error);
      return false;
    }
  }

  #drop(seg: Segment): void {
    if (seg.fd < 0) return;
    closeSync(seg.fd);
    seg.fd = -1;
    rmSync(seg.path, { force: true });
    this.#onDisk -= seg.size;
    if (this.#current === seg) this.#current = undefined;
  }
}
