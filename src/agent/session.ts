/**
 * Session: one WorkerStream connection of the agent. Sends Hello, answers Welcome / Call /
 * CancelCall / CompileCall / Drain frames, heartbeats itself and each running call, and when the stream ends
 * stops its running calls and resolves only once their processes have exited (so the next
 * Hello never advertises resources a dying process still holds; SPEC W6).
 */
import type { ClientDuplexStream } from '@grpc/grpc-js';
import type { Call, Hello, WorkerStreamRequest, WorkerStreamResponse } from '../../generated/ts/berth/v1/worker.js';
import { BerthError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { ExecEvent, Executors } from '../workers/executors/index.js';
import { EventBatcher } from '../workers/event-batcher.js';
import { toFailure, toTask, toTerminal } from '../workers/task.js';
import { FrameWriter } from './frame-writer.js';

/** Heartbeat interval when the Welcome names none, in ms. */
export const DEFAULT_HEARTBEAT_MS = 5000;
/**
 * How long to wait for the Welcome after Hello before giving the stream up and retrying, in ms.
 * Also keeps the process alive meanwhile: a stream that dies without any event (grpc-js drops
 * a status whose trailers are too large) must not leave the agent waiting on nothing.
 */
export const DEFAULT_WELCOME_TIMEOUT_MS = 20_000;

/**
 * How a session ended. `welcomed`: the server accepted the Hello; `code` and `details`: the gRPC
 * status and the server's own message, if the stream ended with one.
 */
export interface SessionEnd {
  welcomed: boolean;
  reason: string;
  code?: number;
  details?: string;
}

/** One connection; `run()` resolves when it is over and its calls are stopped. */
export class Session {
  readonly #writer: FrameWriter;
  readonly #running = new Map<string, { abort: AbortController; done: Promise<void> }>();
  #heartbeatMs = DEFAULT_HEARTBEAT_MS;
  #welcomed = false;
  #alive?: NodeJS.Timeout;
  #onWelcome: () => void = () => undefined;

  constructor(
    readonly stream: ClientDuplexStream<WorkerStreamRequest, WorkerStreamResponse>,
    readonly hello: Hello,
    readonly executors: Executors,
    readonly log: Logger,
    readonly onAttached: () => void = () => undefined,
    readonly welcomeTimeoutMs = DEFAULT_WELCOME_TIMEOUT_MS,
  ) {
    this.#writer = new FrameWriter(stream);
  }

  /** Calls running now. */
  get running(): number {
    return this.#running.size;
  }

  /**
   * Sends Hello and serves frames until the stream ends (or no Welcome came within
   * `welcomeTimeoutMs`); then stops running calls.
   */
  async run(): Promise<SessionEnd> {
    let code: number | undefined;
    let details: string | undefined;
    let noWelcome: NodeJS.Timeout | undefined;
    const ended = new Promise<string>((resolve) => {
      noWelcome = setTimeout(
        () => resolve(`no Welcome within ${this.welcomeTimeoutMs} ms of Hello`),
        this.welcomeTimeoutMs,
      );
      this.#onWelcome = () => clearTimeout(noWelcome);
      this.stream.on('error', (err: Error & { code?: number; details?: string }) => {
        code = err.code;
        details = err.details;
        resolve(err.message);
      });
      this.stream.on('end', () => resolve('server ended the stream'));
      this.stream.on('close', () => resolve('stream closed'));
    });
    this.stream.on('data', (msg: WorkerStreamResponse) => this.#onFrame(msg));
    void this.#writer.send({ $case: 'hello', value: this.hello });
    const reason = await ended;
    clearTimeout(noWelcome);
    clearInterval(this.#alive);
    this.#writer.close();
    this.stream.cancel();
    await this.stopAll(new BerthError('unavailable', `stream to server lost: ${reason}`));
    return { welcomed: this.#welcomed, reason, code, details };
  }

  /** Aborts every running call with `reason`; resolves when their processes have exited. */
  async stopAll(reason: BerthError): Promise<void> {
    const all = [...this.#running.values()];
    for (const c of all) c.abort.abort(reason);
    await Promise.all(all.map((c) => c.done));
  }

  #onFrame(msg: WorkerStreamResponse): void {
    const f = msg.frame;
    if (!f) return;
    switch (f.$case) {
      case 'welcome':
        this.#welcomed = true;
        this.#onWelcome();
        this.#heartbeatMs = f.value.heartbeatMs || DEFAULT_HEARTBEAT_MS;
        this.log.info({ server: f.value.serverVersion, heartbeatMs: this.#heartbeatMs }, 'attached to server');
        clearInterval(this.#alive);
        this.#alive = setInterval(
          () =>
            void this.#writer.send({
              $case: 'heartbeat',
              value: { callId: '', warmPools: this.executors.python.pools.stats() },
            }),
          this.#heartbeatMs,
        );
        this.onAttached();
        return;
      case 'call':
        return this.#start(f.value);
      case 'cancel':
        this.log.info({ call: f.value.callId, reason: f.value.reason }, 'cancel');
        this.#running.get(f.value.callId)?.abort.abort(new BerthError('cancelled', f.value.reason || 'cancelled'));
        return;
      case 'compile':
        void this.#compile(f.value.requestId, f.value.source, `<${f.value.flow}.${f.value.node}>`);
        return;
      case 'drain':
        this.log.info({ graceMs: f.value.graceMs }, 'server is draining');
        return;
    }
  }

  #start(call: Call): void {
    const id = call.callId;
    if (!id || this.#running.has(id)) return; // a duplicate call id runs once
    const abort = new AbortController();
    const beat = setInterval(
      () => void this.#writer.send({ $case: 'heartbeat', value: { callId: id, warmPools: undefined } }),
      this.#heartbeatMs,
    );
    this.log.debug({ call: id }, 'call started'); // per call: debug, as the server's call decisions (issue 11)
    const batch = new EventBatcher(id, (ev) => void this.#writer.send({ $case: 'event', value: ev }));
    const done = (async () => {
      try {
        const task = toTask(id, call.allocation, call.payload);
        const outcome = await this.executors.run(task, (e: ExecEvent) => batch.push(e), abort.signal, this.#writer);
        batch.close(); // every line before the result
        await this.#writer.send(toTerminal(id, outcome));
        this.log.debug({ call: id, ok: outcome.ok }, 'call finished');
      } catch (err) {
        batch.close();
        const e = err instanceof BerthError ? err : new BerthError('unavailable', String(err));
        const type =
          e.kind === 'cancelled' ? 'Cancelled' : e.kind === 'invalid_argument' ? 'InvalidCall' : 'WorkerError';
        await this.#writer.send({
          $case: 'failure',
          value: toFailure(id, { type, message: e.message, traceback: '' }),
        });
        this.log.info({ call: id, reason: e.message }, 'call stopped');
      } finally {
        clearInterval(beat);
        this.#running.delete(id);
      }
    })();
    this.#running.set(id, { abort, done });
  }

  async #compile(requestId: string, source: string, filename: string): Promise<void> {
    const failure = await this.executors
      .compile(source, filename)
      .catch((e: unknown) => ({ type: 'WorkerError', message: String(e), traceback: '' }));
    await this.#writer.send({
      $case: 'compileResult',
      value: { requestId, ok: !failure, failure: failure ? toFailure('', failure) : undefined },
    });
  }
}
