/**
 * The lease renewer (SPEC S7, issue 20): a candidate's etcd lease is granted and kept alive by a worker thread of
 * its own (renewer-thread.mjs), on its own etcd connection and timer, so that work on the server's event loop (a
 * takeover restoring thousands of claims while their holders resume) cannot starve the renewal and depose a
 * healthy leader. `renewedAt` — the send time of the newest keep-alive etcd answered — is shared memory, read
 * synchronously: a leader whose main thread was busy sees at once whether its lease was kept meanwhile, and one
 * whose renewals did fail still stops acting at its own deadline (leadership.ts).
 */
import { EventEmitter } from 'node:events';
import { Worker } from 'node:worker_threads';
import { ETCD_CALL_MS, type EtcdConnection } from './etcd-client.js';

/** Settings. Units: ms, except `ttlS`. */
export interface RenewerOptions {
  connection: EtcdConnection;
  /** Lease TTL, whole seconds (etcd's unit). */
  ttlS: number;
  /** Time between keep-alives. */
  intervalMs: number;
}

/**
 * One lease, renewed off the main thread. `start()` resolves with the lease id; event `lost` (message) when etcd
 * says the lease expired or the thread died. `revoke()` ends the lease (a hand-over) and the thread.
 */
export class Renewer extends EventEmitter {
  readonly #renewed = new BigInt64Array(new SharedArrayBuffer(8));
  #worker?: Worker;
  #ended = false;

  constructor(readonly options: RenewerOptions) {
    super();
  }

  /** Send time (ms since the Unix epoch) of the newest keep-alive (or the grant) etcd answered; 0 before. */
  get renewedAt(): number {
    return Number(Atomics.load(this.#renewed, 0));
  }

  /** Starts the thread and grants the lease. @throws Error with etcd's reason when the grant fails. */
  start(): Promise<string> {
    const { connection, ttlS, intervalMs } = this.options;
    const worker = new Worker(new URL('./renewer-thread.mjs', import.meta.url), {
      workerData: { connection, ttlS, intervalMs, callMs: ETCD_CALL_MS, renewed: this.#renewed.buffer },
    });
    this.#worker = worker;
    worker.unref();
    return new Promise<string>((resolve, reject) => {
      let granted = false;
      worker.on('message', (m: { type: string; id?: string; message?: string }) => {
        if (m.type === 'granted') {
          granted = true;
          resolve(m.id ?? '');
        } else if (m.type === 'failed') reject(new Error(m.message));
        else if (m.type === 'lost') this.#lost(m.message ?? 'lease lost');
      });
      worker.on('error', (err: Error) => (granted ? this.#lost(`renewer failed: ${err.message}`) : reject(err)));
      worker.on('exit', (code) => {
        if (!granted) reject(new Error(`the lease renewer exited ${code} before the grant`));
        else this.#lost(`the lease renewer exited ${code}`);
      });
    });
  }

  /** Revokes the lease (its keys go at once) and ends the thread; bounded by the thread's etcd deadline. */
  async revoke(): Promise<void> {
    const worker = this.#worker;
    if (!worker || this.#ended) return;
    this.#ended = true;
    const done = new Promise<void>((resolve) => {
      worker.once('exit', () => resolve());
      worker.on('message', (m: { type: string }) => m.type === 'revoked' && resolve());
    });
    worker.postMessage({ type: 'revoke' });
    await done;
    await worker.terminate();
  }

  #lost(message: string): void {
    if (this.#ended) return;
    this.#ended = true;
    this.emit('lost', message);
    void this.#worker?.terminate();
  }
}
