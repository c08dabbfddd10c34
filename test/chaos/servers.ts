/**
 * The chaos run's control plane (SPEC S4, S5, S7): one server process restarted on its port and journal, or — given
 * an etcd — several members of one cluster (`--store etcd://… --cluster`), whose leader is SIGKILLed (a crash: a
 * standby takes over once the lease runs out) or SIGTERMed (it resigns: a hand-over) and then started again as a
 * standby. Records each takeover's time from the signal to the new leader serving, and restarts (as a standby) a
 * member that stopped by itself (deposed: it exits 3).
 */
import { join } from 'node:path';
import { closedPort } from '../support/ports.js';
import { type Membership, type ServerProc, type ServerWatch, startServerProc, stop } from './processes.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Settings. `etcd`: `host:port` of an etcd (cluster mode); `members` 2 or 3 (default 3); `ttlS` the leader lease. */
export interface ServersOptions {
  temp: string;
  /** Where each process's log goes (server-<n>.log). */
  logs: string;
  watch: ServerWatch;
  log: (line: string) => void;
  /** Uniform in [lo, hi) from the run's seeded PRNG. */
  between: (lo: number, hi: number) => number;
  etcd?: string;
  members?: number;
  ttlS?: number;
}

/** What the leader kills of a cluster run did. Units: ms. */
export interface ClusterFigures {
  members: number;
  leaderTtlS: number;
  /** From the leader's SIGKILL to a standby serving (restored), per kill. */
  takeoverMs: number[];
  /** From the leader's SIGTERM to a standby serving, per hand-over. */
  handoverMs: number[];
  /** Epochs of the leaders in turn (each must be higher than the one before). */
  epochs: number[];
  /** Members that stopped by themselves (deposed, exit 3), with why; each was started again as a standby. */
  depositions: string[];
}

/** The server process, or the members of a cluster, of one chaos run. */
export class ChaosServers {
  readonly addresses: string[] = [];
  readonly procs: ServerProc[] = [];
  readonly figures: ClusterFigures;
  /** Process starts so far (names the log files). */
  starts = 0;
  readonly #o: ServersOptions;
  readonly #ha?: Membership;
  /** Processes this driver stopped on purpose (their exit is no deposition). */
  readonly #stopped = new Set<ServerProc>();
  #closing = false;
  /** Leader kills run one at a time. */
  #chain: Promise<void> = Promise.resolve();

  constructor(o: ServersOptions) {
    this.#o = o;
    const members = o.etcd ? (o.members ?? 3) : 1;
    const ttlS = o.ttlS ?? 3;
    if (o.etcd) this.#ha = { store: `etcd://${o.etcd}`, cluster: `chaos-${process.pid}-${Date.now()}`, ttlS };
    this.figures = {
      members,
      leaderTtlS: o.etcd ? ttlS : 0,
      takeoverMs: [],
      handoverMs: [],
      epochs: [],
      depositions: [],
    };
  }

  /** True with an etcd: several members, a leader to kill. */
  get clustered(): boolean {
    return this.#ha !== undefined;
  }

  /** Starts every member (the first leads) and resolves once the leader serves and the others stand by. */
  async start(): Promise<void> {
    for (let i = 0; i < this.figures.members; i++) this.addresses.push(`127.0.0.1:${await closedPort()}`);
    for (let i = 0; i < this.figures.members; i++) {
      const p = this.#spawn(i);
      await (i === 0 ? p.serving : p.ready);
      if (i === 0) this.figures.epochs.push(p.epoch);
    }
  }

  /** The member serving now (the newest to say so that still runs), if any. */
  leader(): ServerProc | undefined {
    const live = this.procs.filter((p) => p.servingAt > 0 && p.child.exitCode === null && p.child.signalCode === null);
    return live.sort((a, b) => b.servingAt - a.servingAt)[0];
  }

  /**
   * The leader stops by `signal`. One server: it starts again on its port and journal. A cluster: another member
   * takes over (awaited, timed from the signal), then the stopped one starts again as a standby.
   * Resolves with the ms until a server served again.
   */
  kill(signal: NodeJS.Signals): Promise<number> {
    const next = this.#chain.then(() => this.#kill(signal));
    this.#chain = next.then(
      () => undefined,
      () => undefined,
    );
    return next;
  }

  async #kill(signal: NodeJS.Signals): Promise<number> {
    const old = this.leader();
    if (!old) throw new Error('no leader to stop');
    const slot = this.procs.indexOf(old);
    const others = this.procs.filter((p) => p !== old);
    this.#stopped.add(old);
    const t0 = Date.now();
    await stop(old.child, signal);
    if (!this.#ha) {
      await sleep(this.#o.between(100, 1000));
      const p = this.#spawn(slot);
      await p.serving;
      return Date.now() - t0;
    }
    const next = await Promise.race([
      Promise.any(others.map((p) => p.serving.then(() => p))),
      sleep(60_000).then(() => Promise.reject(new Error(`no member took over within 60 s of the leader's ${signal}`))),
    ]);
    const ms = next.servingAt - t0;
    (signal === 'SIGKILL' ? this.figures.takeoverMs : this.figures.handoverMs).push(ms);
    this.figures.epochs.push(next.epoch);
    this.#o.log(`chaos: ${next.address} took over after the leader's ${signal} in ${ms} ms (epoch ${next.epoch})`);
    await sleep(this.#o.between(100, 1000));
    await this.#spawn(slot).ready;
    return ms;
  }

  #spawn(slot: number): ServerProc {
    const state = join(this.#o.temp, `state-${slot}`);
    const log = join(this.#o.logs, `server-${this.starts++}.log`);
    const p = startServerProc(this.addresses[slot], state, log, this.#o.watch, this.#ha);
    this.procs[slot] = p;
    void p.exited.then(() => this.#exited(slot, p));
    return p;
  }

  /** A member that stopped by itself (deposed) is recorded and started again as a standby. */
  #exited(slot: number, p: ServerProc): void {
    if (this.#closing || this.#stopped.has(p) || !this.#ha) return;
    const why = `${p.address}: exit ${p.child.exitCode ?? p.child.signalCode}${p.deposed ? ` (${p.deposed})` : ''}`;
    this.figures.depositions.push(why);
    this.#o.log(`chaos: member ${why}; starting it again`);
    this.#spawn(slot);
  }

  /** SIGTERMs every process (after any kill under way) and waits for them. */
  async close(): Promise<void> {
    await this.#chain;
    this.#closing = true;
    await Promise.all(this.procs.map((p) => stop(p.child, 'SIGTERM')));
  }
}
