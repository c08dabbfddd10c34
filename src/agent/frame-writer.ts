/**
 * FrameWriter: writes frames to the worker stream in order. While write() says the transport
 * buffer is full, frames queue until 'drain'. Frames sent after the stream closed are dropped.
 * It is full at HIGH queued weight, room again at LOW — a frame weighs one, a batch of output lines one
 * per line, so batching does not let more output pile up. Each call's Flow (held-call.ts) hands it
 * frames only while it has room and pauses its node once HIGH lines wait unsent, so a slow server slows
 * the process's output instead of growing the agent's memory.
 */
import type { ClientDuplexStream } from '@grpc/grpc-js';
import type { WorkerStreamRequest, WorkerStreamResponse } from '../../generated/ts/berth/v1/worker.js';
import type { Flow } from '../workers/executors/types.js';

type Stream = ClientDuplexStream<WorkerStreamRequest, WorkerStreamResponse>;
type Frame = WorkerStreamRequest['frame'];

/**
 * Channel options the agent's channel needs for backpressure to be real (issue 11): grpc-js's retry
 * layer acknowledges writes at once while it buffers up to 1 MiB per call for retries, hiding a
 * slow server from write()/'drain'. With retries off and no retry buffer, a write completes only
 * when HTTP/2 has taken it. (The agent never retries a WorkerStream; it reconnects.)
 */
export const BACKPRESSURE_CHANNEL_OPTIONS = { 'grpc.enable_retries': 0, 'grpc.per_rpc_retry_buffer_size': 0 } as const;

/** Queued weight (frames; lines for a batch) at which the writer reports full, and at which it has room again. */
export const HIGH = 256;
export const LOW = 32;

/** A frame's weight: the lines of a `logs` event, else 1. */
function weight(frame: Frame): number {
  return frame?.$case === 'event' && frame.value.kind?.$case === 'logs'
    ? Math.max(1, frame.value.kind.value.lines.length)
    : 1;
}

/** Ordered, backpressure-honouring writes on one stream. */
export class FrameWriter implements Flow {
  readonly #queue: Array<{ frame: Frame; sent: () => void }> = [];
  /** Weight of the queued frames. */
  #weight = 0;
  readonly #roomWaiters = new Set<() => void>();
  readonly #idleWaiters = new Set<() => void>();
  #blocked = false;
  #closed = false;

  constructor(readonly stream: Stream) {
    const close = () => this.close();
    stream.once('close', close);
    stream.once('error', close);
    stream.once('end', close);
    stream.on('drain', () => this.#flush());
  }

  /** Frames queued and not yet handed to the transport. */
  get backlog(): number {
    return this.#queue.length;
  }

  /** True once the stream closed (later frames are dropped). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Resolves once every queued frame was handed to the transport, or the stream closed. */
  idle(): Promise<void> {
    if (this.#closed || this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.add(resolve));
  }

  /** Sends `frame` after those before it; resolves once handed to the transport (or dropped on a closed stream). */
  send(frame: Frame): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (!this.#blocked) {
      this.#blocked = !this.stream.write({ frame });
      return Promise.resolve();
    }
    this.#weight += weight(frame);
    return new Promise((sent) => this.#queue.push({ frame, sent }));
  }

  /** True while HIGH or more weight waits (and the stream is open). */
  full(): boolean {
    return !this.#closed && this.#weight >= HIGH;
  }

  /** Resolves once at most LOW weight waits, or the stream closed. */
  room(): Promise<void> {
    if (this.#closed || this.#weight <= LOW) return Promise.resolve();
    return new Promise((resolve) => this.#roomWaiters.add(resolve));
  }

  /** Marks the stream closed: queued and later frames are dropped; output readers are released. */
  close(): void {
    this.#closed = true;
    this.#weight = 0;
    for (const q of this.#queue.splice(0)) q.sent();
    this.#wakeRoom();
    this.#wakeIdle();
  }

  #flush(): void {
    this.#blocked = false;
    while (!this.#blocked && !this.#closed && this.#queue.length) {
      const q = this.#queue.shift()!;
      this.#weight -= weight(q.frame);
      this.#blocked = !this.stream.write({ frame: q.frame });
      q.sent();
    }
    if (this.#weight <= LOW) this.#wakeRoom();
    if (this.#queue.length === 0) this.#wakeIdle();
  }

  #wakeIdle(): void {
    for (const w of [...this.#idleWaiters]) w();
    this.#idleWaiters.clear();
  }

  #wakeRoom(): void {
    for (const w of [...this.#roomWaiters]) w();
    this.#roomWaiters.clear();
  }
}
