/**
 * Test support: a test-double WorkerService server (grpc-js + the generated definition) that
 * hands each worker connection to the test, to drive the real agent frame by frame.
 */
import { Metadata, Server, ServerCredentials, status, type ServerDuplexStream } from '@grpc/grpc-js';
import {
  WorkerServiceService,
  type WorkerStreamRequest,
  type WorkerStreamResponse,
} from '../../generated/ts/berth/v1/worker.js';

type Frame = NonNullable<WorkerStreamRequest['frame']>;
/** The value of a frame of kind C. */
type V<C extends Frame['$case']> = Extract<Frame, { $case: C }>['value'];

/** One worker connection as the double sees it. */
export class FakeConnection {
  readonly frames: Frame[] = [];
  readonly #waiters: Array<() => void> = [];
  closed = false;

  constructor(readonly call: ServerDuplexStream<WorkerStreamRequest, WorkerStreamResponse>) {
    call.on('data', (m: WorkerStreamRequest) => {
      if (m.frame) this.frames.push(m.frame);
      this.#wake();
    });
    const close = () => {
      this.closed = true;
      this.#wake();
    };
    call.on('end', () => {
      close();
      call.end(); // the agent half-closed (it is stopping): end our side too, as the server does
    });
    call.on('cancelled', close);
    call.on('error', close);
  }

  /** Sends a server frame as the leader of `epoch` (SPEC S7; default 0: no cluster). */
  send(frame: WorkerStreamResponse['frame'], epoch = 0): void {
    this.call.write({ frame, epoch });
  }

  /** Ends the stream with UNAVAILABLE as a standby does: `details`, and the `leader` trailer when given. */
  refuse(details: string, leader?: string): void {
    const metadata = new Metadata();
    if (leader) metadata.set('leader', leader);
    this.call.emit('error', { code: status.UNAVAILABLE, details, message: details, metadata });
  }

  /** Acknowledges call `callId` up to event `seq` (and its ending when `ended`), as the server does (SPEC S1). */
  ack(callId: string, seq: number, ended = false): void {
    this.send({ $case: 'ack', value: { calls: [{ callId, seq, ended }] } });
  }

  /** The events of call `callId` received on this connection, in order. */
  events(callId: string): Array<V<'event'>> {
    return this.frames.flatMap((f) => (f.$case === 'event' && f.value.callId === callId ? [f.value] : []));
  }

  /** Resolves with the first frame of `kind` matching `pred`; rejects after `ms`. */
  async waitFor<C extends Frame['$case']>(
    kind: C,
    pred: (v: V<C>) => boolean = () => true,
    ms = 15_000,
  ): Promise<V<C>> {
    const end = Date.now() + ms;
    for (;;) {
      const f = this.frames.find((x) => x.$case === kind && pred(x.value as unknown as V<C>));
      if (f) return f.value as unknown as V<C>;
      if (Date.now() > end)
        throw new Error(`no ${kind} frame within ${ms} ms; got ${this.frames.map((x) => x.$case).join(',')}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.max(1, end - Date.now()));
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Frames of call `callId` that are events, heartbeats or terminal frames, in order. */
  of(callId: string): Frame[] {
    return this.frames.filter((f) => 'callId' in f.value && f.value.callId === callId);
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }
}

/** The double server. */
export class FakeHub {
  readonly server = new Server();
  /**
   * Set: every new stream is refused at once as a standby refuses it (FakeConnection.refuse), with these
   * details and this `leader` trailer.
   */
  standby?: { details: string; leader?: string };
  readonly connections: FakeConnection[] = [];
  readonly metadata: Array<Record<string, unknown>> = [];
  #waiters: Array<() => void> = [];
  port = 0;

  /** Binds `host`:`port` (0 = ephemeral; host default 127.0.0.1). */
  async start(port = 0, host = '127.0.0.1'): Promise<string> {
    this.server.addService(WorkerServiceService, {
      workerStream: (call: ServerDuplexStream<WorkerStreamRequest, WorkerStreamResponse>) => {
        this.metadata.push(call.metadata.getMap());
        const c = new FakeConnection(call);
        this.connections.push(c);
        if (this.standby) c.refuse(this.standby.details, this.standby.leader);
        for (const w of this.#waiters.splice(0)) w();
      },
    });
    this.port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync(`${host}:${port}`, ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
    return `${host}:${this.port}`;
  }

  /** Resolves with connection number `n` (0-based) once it exists. */
  async connection(n: number, ms = 15_000): Promise<FakeConnection> {
    const end = Date.now() + ms;
    while (!this.connections[n]) {
      if (Date.now() > end) throw new Error(`no connection #${n} within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 100);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return this.connections[n];
  }

  /** Stops at once, cutting every stream. */
  stop(): void {
    this.server.forceShutdown();
  }
}
