/**
 * Session: one WorkerStream connection of the agent. Sends Hello, answers Welcome / Call / CancelCall /
 * CompileCall / Ack / Drain frames and heartbeats itself and each running call. It owns no calls: they
 * belong to the agent's HeldCalls and outlive the stream (SPEC S1); the Welcome links them to this
 * stream, its end unlinks them. Frames that arrive after the stream ended are ignored, and so is every frame of an
 * older leader epoch than the newest the agent has seen (SPEC S7, epoch.ts); a Welcome of an older epoch ends the
 * stream, so that the agent dials another server.
 */
import type { ClientDuplexStream } from '@grpc/grpc-js';
import type { Hello, WorkerStreamRequest, WorkerStreamResponse } from '../../generated/ts/berth/v1/worker.js';
import { BerthError } from '../errors.js';
import { leaderHint } from '../ha/leader-hint.js';
import type { Logger } from '../log/logger.js';
import type { Executors } from '../workers/executors/index.js';
import { toFailure } from '../workers/task.js';
import { EpochGuard } from './epoch.js';
import { FrameWriter } from './frame-writer.js';
import type { HeldCalls } from './held-calls.js';

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
 * status and the server's own message, if the stream ended with one; `leader`: the leader address a
 * standby named (its `leader` trailer, SPEC S7), to be dialled next.
 */
export interface SessionEnd {
  welcomed: boolean;
  reason: string;
  code?: number;
  details?: string;
  leader?: string;
}

/** One connection; `run()` resolves when it is over (its calls keep running). */
export class Session {
  readonly writer: FrameWriter;
  #heartbeatMs = DEFAULT_HEARTBEAT_MS;
  #welcomed = false;
  #over = false;
  #alive?: NodeJS.Timeout;
  #onWelcome: () => void = () => undefined;
  #end: (why: string) => void = () => undefined;
  #ended?: Promise<unknown>;

  constructor(
    readonly stream: ClientDuplexStream<WorkerStreamRequest, WorkerStreamResponse>,
    readonly hello: Hello,
    readonly calls: HeldCalls,
    readonly executors: Executors,
    readonly log: Logger,
    readonly onAttached: () => void = () => undefined,
    readonly welcomeTimeoutMs = DEFAULT_WELCOME_TIMEOUT_MS,
    /** The agent's newest epoch seen, shared by all its sessions. */
    readonly epochs = new EpochGuard(),
  ) {
    this.writer = new FrameWriter(stream);
  }

  /** True once the server accepted the Hello (and the stream is not over). */
  get welcomed(): boolean {
    return this.#welcomed && !this.#over;
  }

  /**
   * Sends Hello and serves frames until the stream ends (or no Welcome came within
   * `welcomeTimeoutMs`); then unlinks the calls, which keep running.
   */
  async run(): Promise<SessionEnd> {
    let code: number | undefined;
    let details: string | undefined;
    let leader: string | undefined;
    let noWelcome: NodeJS.Timeout | undefined;
    const ended = new Promise<string>((resolve) => {
      const end = (why: string) => {
        this.#over = true;
        resolve(why);
      };
      noWelcome = setTimeout(
        () => end(`no Welcome within ${this.welcomeTimeoutMs} ms of Hello`),
        this.welcomeTimeoutMs,
      );
      this.#onWelcome = () => clearTimeout(noWelcome);
      this.#end = end;
      this.stream.on('error', (err: Error & { code?: number; details?: string }) => {
        code ??= err.code;
        details ??= err.details;
        leader ??= leaderHint(err);
        end(err.message);
      });
      this.stream.on('end', () => end('server ended the stream'));
      this.stream.on('close', () => end('stream closed'));
    });
    this.#ended = ended;
    this.stream.on('data', (msg: WorkerStreamResponse) => {
      if (!this.#over) this.#onFrame(msg);
    });
    void this.writer.send({ $case: 'hello', value: this.hello });
    const reason = await ended;
    clearTimeout(noWelcome);
    clearInterval(this.#alive);
    this.writer.close();
    this.stream.cancel();
    this.calls.detach(this.writer);
    return { welcomed: this.#welcomed, reason, code, details, leader };
  }

  /** Sends Stopping{reason} (SPEC S2): the server fails this agent's calls at once. */
  stopping(reason: string): Promise<void> {
    return this.writer.send({ $case: 'stopping', value: { reason } });
  }

  /**
   * Ends the stream gracefully: waits (at most `ms`) for the queued frames to reach the transport,
   * half-closes, and waits for the server to close; then cancels.
   */
  async close(ms = 2000): Promise<void> {
    if (this.#over) return;
    const timeout = new Promise((r) => setTimeout(r, ms).unref());
    await Promise.race([this.writer.idle(), timeout]);
    this.stream.end();
    await Promise.race([this.#ended, timeout]);
    this.stream.cancel();
  }

  #onFrame(msg: WorkerStreamResponse): void {
    const f = msg.frame;
    if (!f) return;
    const newest = this.epochs.newest;
    if (!this.epochs.admit(msg.epoch)) {
      this.log.warn(
        { frame: f.$case, epoch: msg.epoch, newestEpoch: newest },
        `ignoring a ${f.$case} frame of epoch ${msg.epoch}: epoch ${newest} is newer (a deposed leader, SPEC S7)`,
      );
      if (f.$case === 'welcome' && !this.#welcomed)
        this.#end(`Welcome of epoch ${msg.epoch} is older than epoch ${newest}: that server no longer leads`);
      return;
    }
    switch (f.$case) {
      case 'welcome':
        if (this.#welcomed) return; // one Welcome per stream
        this.#welcomed = true;
        this.#onWelcome();
        this.#heartbeatMs = f.value.heartbeatMs || DEFAULT_HEARTBEAT_MS;
        this.log.info(
          { serverVersion: f.value.serverVersion, heartbeatMs: this.#heartbeatMs, resumed: f.value.calls.length },
          'attached to server',
        );
        this.calls.attach(this.writer, f.value.calls);
        this.#alive = setInterval(() => this.#beat(), this.#heartbeatMs);
        this.onAttached();
        return;
      case 'call':
        if (this.#welcomed) this.calls.start(this.writer, f.value);
        return;
      case 'cancel':
        this.log.info({ call: f.value.callId, reason: f.value.reason }, 'cancel');
        this.calls.cancel(f.value.callId, new BerthError('cancelled', f.value.reason || 'cancelled'));
        return;
      case 'ack':
        this.calls.ack(this.writer, f.value.calls);
        return;
      case 'compile':
        void this.#compile(f.value.requestId, f.value.source, `<${f.value.flow}.${f.value.node}>`);
        return;
      case 'drain':
        this.log.info({ graceMs: f.value.graceMs }, 'server is draining');
        return;
    }
  }

  /** The worker's heartbeat (with its warm pools) and one per running call. */
  #beat(): void {
    void this.writer.send({
      $case: 'heartbeat',
      value: { callId: '', warmPools: this.executors.python.pools.stats() },
    });
    for (const id of this.calls.runningIds())
      void this.writer.send({ $case: 'heartbeat', value: { callId: id, warmPools: undefined } });
  }

  async #compile(requestId: string, source: string, filename: string): Promise<void> {
    const failure = await this.executors
      .compile(source, filename)
      .catch((e: unknown) => ({ type: 'WorkerError', message: String(e), traceback: '' }));
    await this.writer.send({
      $case: 'compileResult',
      value: { requestId, ok: !failure, failure: failure ? toFailure('', failure) : undefined },
    });
  }
}
