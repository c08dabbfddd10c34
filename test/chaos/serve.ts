/**
 * The chaos driver's server process (SIGKILLed and started again on the same port and journal): the
 * real BerthServer as `berth serve` builds it — argv[2] the listen address, argv[3] the state dir (its
 * journal), argv[4] a log file (info) — with claims held 5 s after a restart (`--claim-hold`) and the
 * books invariant (SPEC P8) checked at start, on the books restored from the journal, and after every
 * event. Prints one JSON object per line on stdout: `{"serving": address, "ms": start to serving}` once
 * it serves, `{"invariant": message}` per broken check, `{"kind", "machine"}` per worker attach and
 * detach. SIGTERM stops it as it stops `berth serve` (SPEC S5: the work keeps running); it lives at most 15 min.
 * The engine host runs its calls in process (`--engine-keeper off`): they die with a SIGKILL, and their callers are
 * told they were lost.
 */
import { resolveServeOptions } from '../../src/config/serve-options.js';
import { createLogger } from '../../src/log/logger.js';
import { BerthServer } from '../../src/server/server.js';

const t0 = performance.now();
const [listen, stateDir, logFile] = process.argv.slice(2);
const say = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(o)}\n`);
const options = resolveServeOptions(
  { listen, stateDir, reconnectGrace: 30, grace: 1, claimHold: 5, engineKeeper: 'off' as const },
  {},
);
const server = new BerthServer(options, { cpus: 2, gpuIds: [0] }, { log: createLogger('info', false, logFile) });
await server.start();
const placer = server.context.placer;
const check = (after: string) => {
  try {
    placer.checkInvariants();
  } catch (err) {
    say({ invariant: `after ${after}: ${(err as Error).message}` });
  }
};
check('restore');
server.context.events.subscribe((e) => {
  check(e.kind);
  if (e.machine && (e.kind === 'worker_attached' || e.kind === 'worker_detached'))
    say({ kind: e.kind, machine: e.machine });
});
say({ serving: server.address, ms: Math.round(performance.now() - t0) });
process.once('SIGTERM', () => void server.halt().then(() => process.exit(0))); // as `berth serve`: no drain
setTimeout(() => process.exit(5), 15 * 60_000).unref();
