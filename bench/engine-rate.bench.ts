/**
 * Engine rate (issue 24 item 9): tiny tasks `process(x) -> x + 1` from Python engines, each placed by its own ask
 * (1 cpu) on a real `berth serve --cpus BENCH_CPUS`: the sync client one at a time (BENCH_SECONDS per figure), and
 * BENCH_TASKS at once through the asyncio client with 100 in flight. Beside each, in the same rounds: a bare grpcio
 * caller of the same RPC (RunWhole) against the same server (the floor under the client), one of the Run stream (what
 * the clients used before RunWhole), the client kept on the Run stream by an `on_event` callback (the "before"
 * figure), and Ray (`ray.init(num_cpus=
 * BENCH_CPUS)`) when BENCH_RAY_PYTHON names a Python with ray installed (default /tmp/fast-ray/bin/python).
 * The berth drivers import this checkout's client (clients/python/src first on PYTHONPATH, not whatever the venv
 * installed); BENCH_CLIENT_BEFORE=<another checkout's clients/python/src> adds that client as one more caller in the
 * same rounds (a before/after of a client change from one command).
 * Each caller is a warm process (bench/engine-rate/driver.py) sent one command per figure; BENCH_PAIRS rounds
 * alternate the order, after one warm-up figure each. Figures are medians of the rounds; ratios are medians of the
 * per-round ratios, with the worst round beside them. Targets: berth ≥ 2× Ray in both modes; each client at most
 * 15 % slower than its bare grpcio caller (ratio ≥ 1/1.15).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { median, report, ROOT, startBerth, type BenchRow } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const TASKS = Number(process.env.BENCH_TASKS ?? 2000);
const IN_FLIGHT = 100;
const PAIRS = Number(process.env.BENCH_PAIRS ?? 3);
const CPUS = Number(process.env.BENCH_CPUS ?? 2);
const PY = join(ROOT, '.venv', 'bin', 'python');
const RAY_PY = process.env.BENCH_RAY_PYTHON ?? '/tmp/fast-ray/bin/python';
const CLIENT_SRC = join(ROOT, 'clients', 'python', 'src');
const BEFORE_SRC = process.env.BENCH_CLIENT_BEFORE;

/** A warm driver process: `ask(cmd)` sends one command and resolves with its rate (tasks/s). */
interface Driver {
  name: string;
  ask(cmd: string): Promise<number>;
  child: ChildProcess;
}

async function startDriver(
  name: string,
  python: string,
  kind: string,
  address: string,
  clientSrc = CLIENT_SRC,
): Promise<Driver> {
  const child = spawn(python, [join(ROOT, 'bench', 'engine-rate', 'driver.py'), kind, address], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, BENCH_CPUS: String(CPUS), PYTHONWARNINGS: 'ignore', PYTHONPATH: clientSrc },
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (): Promise<Record<string, number>> => {
    const got = await lines.next();
    if (got.done) throw new Error(`${name} driver ended (exit ${child.exitCode})`);
    return JSON.parse(got.value) as Record<string, number>;
  };
  await next(); // {"ready": kind}
  return {
    name,
    child,
    async ask(cmd) {
      child.stdin!.write(`${cmd}\n`);
      return (await next()).rate;
    },
  };
}

const berth = await startBerth(CPUS);
const drivers: Driver[] = [];
try {
  const client = await startDriver('berth client', PY, 'berth', berth.address);
  const before = await startDriver('berth client, Run stream', PY, 'berth-stream', berth.address);
  const bare = await startDriver('bare grpcio', PY, 'grpc', berth.address);
  const stream = await startDriver('bare grpcio, Run stream', PY, 'grpc-stream', berth.address);
  drivers.push(client, before, bare, stream);
  const older = BEFORE_SRC
    ? await startDriver('berth client, BENCH_CLIENT_BEFORE', PY, 'berth', berth.address, BEFORE_SRC)
    : undefined;
  if (older) drivers.push(older);
  const ray = existsSync(RAY_PY) ? await startDriver('Ray', RAY_PY, 'ray', '') : undefined;
  if (ray) drivers.push(ray);
  else console.log(`(no Ray: ${RAY_PY} does not exist; set BENCH_RAY_PYTHON to a Python with ray installed)`);
  const rows: BenchRow[] = [];
  const modes = [
    { mode: 'sync client, one at a time', cmd: `sync ${SECONDS}`, warm: 'sync 2' },
    { mode: `asyncio client, ${TASKS} at once (${IN_FLIGHT} in flight)`, cmd: `aio ${TASKS} ${IN_FLIGHT}`, warm: '' },
  ];
  for (const m of modes) {
    for (const d of drivers) await d.ask(m.warm || `aio ${Math.min(TASKS, 500)} ${IN_FLIGHT}`);
    const got = new Map<Driver, number[]>(drivers.map((d) => [d, []]));
    for (let round = 0; round < PAIRS; round++) {
      const order = round % 2 === 0 ? drivers : [...drivers].reverse();
      for (const d of order) got.get(d)!.push(await d.ask(m.cmd));
    }
    const rounds = (vs: number[], base: number[]) => vs.map((v, i) => v / base[i]);
    const c = got.get(client)!;
    const b = got.get(bare)!;
    const overBare = rounds(c, b);
    rows.push({ name: `${m.mode}: bare grpcio caller of RunWhole (floor)`, value: median(b), unit: 'tasks/s' });
    rows.push({
      name: `${m.mode}: bare grpcio caller of the Run stream`,
      value: median(got.get(stream)!),
      unit: 'tasks/s',
    });
    const overBefore = rounds(c, got.get(before)!);
    rows.push({
      name: `${m.mode}: berth client on the Run stream (before RunWhole)`,
      value: median(got.get(before)!),
      unit: 'tasks/s',
    });
    rows.push({
      name: `${m.mode}: berth client vs itself on the Run stream (worst ${Math.min(...overBefore).toFixed(2)}×)`,
      value: median(c),
      unit: 'tasks/s',
      ratio: median(overBefore),
    });
    rows.push({
      name: `${m.mode}: berth client vs its bare grpcio caller (worst ${Math.min(...overBare).toFixed(2)}×)`,
      value: median(c),
      unit: 'tasks/s',
      ratio: median(overBare),
      target: '≥ 0.87× (at most 15 % over)',
      met: median(overBare) >= 1 / 1.15,
    });
    if (older) {
      const o = got.get(older)!;
      const overOlder = rounds(c, o);
      rows.push({
        name: `${m.mode}: BENCH_CLIENT_BEFORE's client vs the bare grpcio caller`,
        value: median(o),
        unit: 'tasks/s',
        ratio: median(rounds(o, b)),
      });
      rows.push({
        name: `${m.mode}: berth client vs BENCH_CLIENT_BEFORE's (worst ${Math.min(...overOlder).toFixed(2)}×)`,
        value: median(c),
        unit: 'tasks/s',
        ratio: median(overOlder),
      });
    }
    if (ray) {
      const r = got.get(ray)!;
      const overRay = rounds(c, r);
      rows.push({ name: `${m.mode}: Ray`, value: median(r), unit: 'tasks/s' });
      rows.push({
        name: `${m.mode}: berth client vs Ray (worst ${Math.min(...overRay).toFixed(2)}×)`,
        value: median(c),
        unit: 'tasks/s',
        ratio: median(overRay),
        target: '≥ 2× Ray',
        met: median(overRay) >= 2,
      });
    }
  }
  report(
    'engine-rate',
    `tiny Python tasks placed by ask on berth serve --cpus ${CPUS}, ${SECONDS} s per sync figure, ${TASKS} tasks ` +
      `per asyncio figure; medians of ${PAIRS} rounds with the callers side by side`,
    rows,
  );
} finally {
  // end of input ends each driver (Ray shuts down its own processes); SIGKILL if one hangs
  await Promise.all(
    drivers.map(
      (d) =>
        new Promise<void>((resolve) => {
          if (d.child.exitCode !== null) return resolve();
          const t = setTimeout(() => d.child.kill('SIGKILL'), 15_000);
          d.child.once('exit', () => (clearTimeout(t), resolve()));
          d.child.stdin!.end();
        }),
    ),
  );
  await berth.stop();
}
