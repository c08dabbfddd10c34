/**
 * Test support: a test-double worker speaking WorkerStream with the generated client, driven by
 * the test frame by frame (SPEC W1–W5 acceptance without the real agent).
 */
import { credentials, Metadata, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import type { Failure } from '../../generated/ts/berth/v1/calls.js';
import {
  WorkerServiceClient,
  type Call,
  type CancelCall,
  type CompileCall,
  type WorkerStreamRequest,
  type WorkerStreamResponse,
} from '../../generated/ts/berth/v1/worker.js';

type Frame = NonNullable<WorkerStreamResponse['frame']>;
/** The value of a frame of kind C. */
type V<C extends Frame['$case']> = Extract<Frame, { $case: C }>['value'];

/** Options of the double's Hello. */
export interface TestWorkerOptions {
  name: string;
  labels?: string[];
  cpus?: number;
  gpuIds?: number[];
  maxParallel?: number;
  /** Hello agent_id and instance_id (SPEC S2); default empty. */
  agentId?: string;
  instanceId?: string;
  /** Hello held_calls: calls this instance still holds from an earlier stream (SPEC S1). */
  heldCalls?: { callId: string; lastSeq: number; ended?: boolean }[];
  /** Request metadata of the stream (e.g. the engine keeper's secret header). */
  metadata?: Record<string, string>;
}

/** One connected test-double worker. */
export class TestWorker {
  readonly client: WorkerServiceClient;
  readonly stream: ClientDuplexStream<WorkerStreamRequest, WorkerStreamResponse>;
  readonly frames: Frame[] = [];
  /** Set when the server ends the stream (status or end). */
  ended?: ServiceError | 'end';
  readonly #waiters = new Set<() => void>();

  constructor(
    address: string,
    readonly o: TestWorkerOptions,
  ) {
    this.client = new WorkerServiceClient(address, credentials.createInsecure());
    const md = new Metadata();
    for (const [k, v] of Object.entries(o.metadata ?? {})) md.set(k, v);
    this.stream = this.client.workerStream(md);
    this.stream.on('data', (m: WorkerStreamResponse) => {
      if (m.frame) this.frames.push(m.frame);
      this.#wake();
    });
    this.stream.on('error', (e: ServiceError) => {
      this.ended ??= e;
      this.#wake();
    });
    this.stream.on('end', () => {
      this.ended ??= 'end';
      this.#wake();
    });
    this.send({
      $case: 'hello',
      value: {
        name: o.name,
        labels: o.labels ?? [],
        inventory: { cpus: o.cpus ?? 4, gpuIds: o.gpuIds ?? [], resources: {}, gpuNames: [] },
        maxParallel: o.maxParallel ?? 0,
        version: 'test',
        agentId: o.agentId ?? '',
        instanceId: o.instanceId ?? '',
        heldCalls: (o.heldCalls ?? []).map((c) => ({ callId: c.callId, lastSeq: c.lastSeq, ended: c.ended ?? false })),
        disconnectGraceMs: 0,
      },
    });
  }

  /** Connects and waits for Welcome. */
  static async attach(address: string, o: TestWorkerOptions): Promise<TestWorker> {
    const w = new TestWorker(address, o);
    await w.next('welcome');
    return w;
  }

  /** Sends a frame. */
  send(frame: WorkerStreamRequest['frame']): void {
    this.stream.write({ frame });
  }

  /** The first frame of `kind` matching `pred` (waits up to `ms`). */
  async next<C extends Frame['$case']>(kind: C, pred: (v: V<C>) => boolean = () => true, ms = 10_000): Promise<V<C>> {
    const end = Date.now() + ms;
    for (;;) {
      const f = this.frames.find((x) => x.$case === kind && pred(x.value as never));
      if (f) return f.value as unknown as V<C>;
      if (Date.now() > end)
        throw new Error(
          `${this.o.name}: no ${kind} frame within ${ms} ms (got ${this.frames.map((x) => x.$case).join(',')})`,
        );
      await this.#wait(end);
    }
  }

  /** Call frames received so far. */
  get calls(): Call[] {
    return this.frames.flatMap((f) => (f.$case === 'call' ? [f.value] : []));
  }

  /** Cancel frames received so far. */
  get cancels(): CancelCall[] {
    return this.frames.flatMap((f) => (f.$case === 'cancel' ? [f.value] : []));
  }

  /** Compile frames received so far. */
  get compiles(): CompileCall[] {
    return this.frames.flatMap((f) => (f.$case === 'compile' ? [f.value] : []));
  }

  /** Answers call `callId` with a value. */
  result(callId: string, value: unknown): void {
    this.send({ $case: 'result', value: { callId, value } });
  }

  /** Sends one stdout line of call `callId` as an event with sequence number `seq` (SPEC S1). */
  line(callId: string, seq: number, line: string): void {
    this.send({ $case: 'event', value: { callId, seq, kind: { $case: 'log', value: { stream: 'stdout', line } } } });
  }

  /** Says the agent stops for good (SPEC S2). */
  stopping(reason: string): void {
    this.send({ $case: 'stopping', value: { reason } });
  }

  /** Answers call `callId` with a failure. */
  failure(f: Failure): void {
    this.send({ $case: 'failure', value: f });
  }

  /** Waits until the server has ended this stream. */
  async waitEnded(ms = 10_000): Promise<ServiceError | 'end'> {
    const end = Date.now() + ms;
    while (!this.ended) {
      if (Date.now() > end) throw new Error(`${this.o.name}: stream not ended within ${ms} ms`);
      await this.#wait(end);
    }
    return this.ended;
  }

  /** Drops the stream abruptly (as a crashed worker would) and closes the channel. */
  drop(): void {
    this.stream.cancel();
    this.client.close();
  }

  /** Ends politely and closes the channel. */
  close(): void {
    this.stream.end();
    this.stream.cancel();
    this.client.close();
  }

  #wait(end: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.#waiters.delete(done);
        resolve();
      };
      const t = setTimeout(done, Math.max(1, end - Date.now()));
      this.#waiters.add(done);
    });
  }

  #wake(): void {
    for (const w of [...this.#waiters]) w();
  }
}
