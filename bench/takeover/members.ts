/**
 * The takeover bench's cluster (issue 20, SPEC S7): real `berth serve --store etcd://… --cluster <name>` members on
 * loopback ports of their own (default leader lease, 5 s), each with one core and no GPU of its own so the work is on
 * the workers; a member is SIGKILLed or SIGTERMed and started again (as a standby) on the same port. Every process
 * is ended by the survival harness's `stopAll()`.
 */
import type { ChildProcess } from 'node:child_process';
import { spawnBerth } from '../../test/support/cli.js';
import { freeAddress, kill, started, tempDir } from '../survival/harness.js';

/** One running member process. */
export interface Member {
  child: ChildProcess;
  address: string;
  /** When it logged "berth serving" (performance.now() ms), or undefined while it has not. */
  servingAt?: number;
  /** When it logged `cluster_elected` (its log's time, ms since the Unix epoch). */
  electedAt?: number;
  /** Its restore on taking over, ms (from its `cluster_took_over` log line), once it took over. */
  tookOverMs?: number;
  /** Resolves once it serves (leads and restored); never while it stands by. */
  serving: Promise<void>;
  /** Resolves once it serves or stands by. */
  ready: Promise<void>;
  /** Its stderr so far (JSON log lines). */
  log: () => string;
}

/** The members of one cluster, by slot. */
export class Members {
  readonly addresses: string[] = [];
  readonly slots: Member[] = [];

  constructor(
    readonly etcd: string,
    readonly cluster: string,
    readonly extra: string[] = [],
  ) {}

  /** Starts `n` members in turn (the first leads) and resolves once each leads or stands by. */
  async start(n: number): Promise<void> {
    for (let i = 0; i < n; i++) this.addresses.push(await freeAddress());
    for (let i = 0; i < n; i++) {
      const m = this.spawn(i);
      await (i === 0 ? m.serving : m.ready);
    }
  }

  /** The member serving now (the newest to say so that still runs). */
  leader(): Member | undefined {
    const live = this.slots.filter(
      (m) => m.servingAt !== undefined && m.child.exitCode === null && !m.child.signalCode,
    );
    return live.sort((a, b) => (b.servingAt ?? 0) - (a.servingAt ?? 0))[0];
  }

  /** Stops `m` by `signal` and waits for its exit. */
  stop(m: Member, signal: NodeJS.Signals): Promise<void> {
    return kill(m.child, signal);
  }

  /** Starts the member of `slot` (again) on its address with a state dir of its own. */
  spawn(slot: number): Member {
    const address = this.addresses[slot];
    const child = spawnBerth([
      'serve',
      '--listen',
      address,
      '--store',
      `etcd://${this.etcd}`,
      '--cluster',
      this.cluster,
      '--state-dir',
      tempDir(`member-${slot}`),
      '--cpus',
      '1',
      '--gpus',
      '',
      '--log-level',
      'info',
      ...this.extra,
    ]);
    started.add(child);
    child.stdout?.resume();
    let log = '';
    const m: Member = { child, address, serving: Promise.resolve(), ready: Promise.resolve(), log: () => log };
    let onServing!: () => void;
    let onReady!: () => void;
    m.serving = new Promise((r) => (onServing = r));
    m.ready = new Promise((r) => (onReady = r));
    child.stderr?.on('data', (d: Buffer) => {
      log += d.toString();
      if (m.servingAt === undefined && log.includes('"msg":"berth serving"')) {
        m.servingAt = performance.now();
        onServing();
        onReady();
      }
      if (log.includes('"msg":"berth standing by"')) onReady();
      const took = /"event":"cluster_took_over"[^\n]*?"ms":(\d+)/.exec(log);
      if (took) m.tookOverMs ??= Number(took[1]);
      const elected = /"time":(\d+)[^\n]*"event":"cluster_elected"/.exec(log);
      if (elected) m.electedAt ??= Number(elected[1]);
    });
    this.slots[slot] = m;
    return m;
  }
}
