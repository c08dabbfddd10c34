/**
 * FrameWriter: writes frames to the worker stream in order, waiting for 'drain' when write()
 * says the transport buffer is full. Frames sent after the stream closed are dropped.
 */
import type { ClientDuplexStream } from '@grpc/grpc-js';
import type { WorkerStreamRequest, WorkerStreamResponse } from '../../generated/ts/berth/v1/worker.js';

type Stream = ClientDuplexStream<WorkerStreamRequest, WorkerStreamResponse>;

/** Ordered, backpressure-honouring writes on one stream. */
export class FrameWriter {
  #chain: Promise<void> = Promise.resolve();
  #closed = false;
  /** Frames queued and not yet handed to the transport. */
  backlog = 0;

  constructor(readonly stream: Stream) {
    const close = () => (this.#closed = true);
    stream.once('close', close);
    stream.once('error', close);
    stream.once('end', close);
  }

  /** Queues `frame`; resolves once it was handed to the transport (or dropped on a closed stream). */
  send(frame: WorkerStreamRequest['frame']): Promise<void> {
    this.backlog++;
    this.#chain = this.#chain.then(() => this.#write(frame)).finally(() => this.backlog--);
    return this.#chain;
  }

  /** Marks the stream closed: later frames are dropped. */
  close(): void {
    this.#closed = true;
  }

  #write(frame: WorkerStreamRequest['frame']): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.stream.write({ frame })) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.stream.off('drain', done);
        this.stream.off('close', done);
        this.stream.off('error', done);
        resolve();
      };
      this.stream.once('drain', done);
      this.stream.once('close', done);
      this.stream.once('error', done);
    });
  }
}
