/**
 * The chaos driver's server process (SIGKILLed and started again on the same port and journal): the
 * real BerthServer as `berth serve` builds it, argv[2] the listen address, argv[3] the state dir
 * (journal), claims held 5 s after a restart (--claim-hold), with the books invariant (SPEC P8) checked at start — on the books restored from the
 * journal — and after every event. Prints one JSON object per line on stdout: `{"serving": address}`
 * once it serves, `{"invariant": message}` per broken check, `{"kind", "machine"}` per worker
 * attach/detach. SIGTERM stops it (grace 1 s); it lives at most 15 min.
 */
import { startServer } from '../support/server.js';

const [listen, stateDir] = process.argv.slice(2);
const say = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(o)}\n`);
const t = await startServer({ cpus: 2, gpuIds: [0], flags: { listen, stateDir, reconnectGrace: 30, grace: 1, claimHold: 5 } });
const placer = t.server.context.placer;
const check = (after: string) => {
  try {
    placer.checkInvariants();
  } catch (err) {
    say({ invariant: `after ${after}: ${(err as Error).message}` });
  }
};
check('restore');
t.server.context.events.subscribe((e) => {
  check(e.kind);
  if (e.machine && (e.kind === 'worker_attached' || e.kind === 'worker_detached'))
    say({ kind: e.kind, machine: e.machine });
});
say({ serving: t.address });
process.once('SIGTERM', () => {
  t.placement.close();
  t.worker.close();
  void t.server.stop(1000).then(() => process.exit(0));
});
setTimeout(() => process.exit(5), 15 * 60_000).unref();
