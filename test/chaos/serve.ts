/**
 * The chaos driver's server process (SIGKILLed or SIGTERMed and started again on the same port): the real
 * BerthServer as `berth serve` builds it — argv[2] the listen address, argv[3] the state dir (its journal), argv[4] a
 * log file (info); with argv[5] `etcd://host:port` and argv[6] a cluster name, a member of that cluster (SPEC S7,
 * `--leader-ttl` argv[7], default 3) that stands by until it leads — with claims held 5 s after a restart or a
 * takeover (`--claim-hold`) and the books invariant (SPEC P8) checked on the books restored (from the journal, or
 * from etcd on a takeover) and after every event. Prints one JSON object per line on stdout: `{"standby": address}`
 * once a member stands by, `{"serving": address, "ms": start to serving, "epoch"}` once it serves (leads and
 * restored), `{"invariant": message}` per broken check, `{"kind", "machine"}` per worker attach and detach,
 * `{"deposed": reason}` when a member stops acting (it then exits 3, as `berth serve`). SIGTERM stops it as it stops
 * `berth serve` (SPEC S5: the work keeps running; a leader resigns at once). It lives at most 15 min.
 * The engine host runs its calls in process (`--engine-keeper off`): they die with a SIGKILL, and their callers are
 * told they were lost.
 */
import { resolveServeOptions } from '../../src/config/serve-options.js';
import { createLogger } from '../../src/log/logger.js';
import { BerthServer } from '../../src/server/server.js';

const t0 = performance.now();
const [listen, stateDir, logFile, store, cluster, ttl] = process.argv.slice(2);
const say = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(o)}\n`);
const ha = store ? { store, cluster, leaderTtl: ttl ?? '3' } : {};
const options = resolveServeOptions(
  { listen, stateDir, reconnectGrace: 30, grace: 1, claimHold: 5, engineKeeper: 'off' as const, ...ha },
  {},
);
const server = new BerthServer(
  options,
  { cpus: 2, gpuIds: [0] },
  {
    log: createLogger('info', false, logFile),
    onDeposed: (reason) => {
      say({ deposed: reason });
      process.exit(server.exitCode);
    },
  },
);
const placer = server.context.placer;
const check = (after: string) => {
  try {
    placer.checkInvariants();
  } catch (err) {
    say({ invariant: `after ${after}: ${(err as Error).message}` });
  }
};
server.context.events.subscribe((e) => {
  check(e.kind);
  if (e.machine && (e.kind === 'worker_attached' || e.kind === 'worker_detached'))
    say({ kind: e.kind, machine: e.machine });
});
// Serving comes after the restore (at start with the embedded journal; on a takeover for a member).
server.lifecycle.onChange((state) => {
  if (state !== 'serving') return;
  check(store ? 'takeover' : 'restore');
  say({ serving: server.address, ms: Math.round(performance.now() - t0), epoch: server.context.epoch });
});
process.once('SIGTERM', () => void server.halt().then(() => process.exit(0))); // as `berth serve`: no drain
setTimeout(() => process.exit(5), 15 * 60_000).unref();
await server.start();
if (store && server.lifecycle.state !== 'serving') say({ standby: server.address });
