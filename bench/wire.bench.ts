/**
 * Claim cycles over the wire against a bare grpc-js bidi echo (issue 9 item 3/4). Each point runs a
 * server child (the real `berth serve`, compiled as users run it, or an echo built here with the same
 * messages) and a client child that keeps N streams cycling (open, Ask → Granted, Release → Released,
 * close), server and client pinned to separate cores with `taskset` when there are two or more.
 * Prints, per stream count, the cycle rate of both and the server CPU per cycle (user + system of the
 * server process, from /proc). Each round runs echo and berth back to back (order alternating), so both
 * see the same neighbours; the ratios judged are the medians of the rounds' ratios, the worst round is
 * shown beside them, and the rates and CPU shown are the best round's. Writes bench/results/wire.json.
 * Targets: CPU ratio ≤ 2, rate ratio ≥ 0.6. The 1-minute load average before and after is printed and
 * saved: other processes on the cores disturb the rates far more than the CPU per cycle.
 * Env: WIRE_ROUNDS (default 4), WIRE_MS (measured window, default 3000), WIRE_STREAMS (e.g. "1,16"),
 * WIRE_PROF=<dir> (the berth server runs with --cpu-prof into <dir>), WIRE_LOG_LEVEL (berth's, default warn).
 */
import { availableParallelism, loadavg } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { child, cpuMicros, nextMessage, pinned, startBerthServer, type ServerChild } from './lib/wire-harness.js';
import { median } from './support.js';

const here = dirname(fileURLToPath(import.meta.url));
const ROUNDS = Number(process.env.WIRE_ROUNDS ?? 4);
const RUN_MS = Number(process.env.WIRE_MS ?? 3000);
const WARM_MS = 1000;
const STREAMS = (process.env.WIRE_STREAMS ?? '1,16,128').split(',').map(Number);

type Kind = 'echo' | 'berth';

/**
 * The server of a point. `berth` is the real CLI (wire-harness.ts), logging at warn; `echo` is the bare
 * grpc-js server of wire/server.ts.
 */
async function startServer(kind: Kind): Promise<ServerChild> {
  if (kind === 'echo') {
    const proc = child('server.ts', [], 0);
    const { port } = await nextMessage<{ port: number }>(proc);
    return {
      port,
      proc,
      async stop() {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.send('stop');
        await exited;
      },
    };
  }
  const dir = process.env.WIRE_PROF;
  const prof = dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
  return startBerthServer([], process.env.WIRE_LOG_LEVEL ?? 'warn', prof);
}

/** One point: cycles per second seen by the client and server CPU µs per cycle. */
async function point(kind: Kind, streams: number): Promise<{ rate: number; cpuUs: number }> {
  const server = await startServer(kind);
  const client = child('client.ts', [`127.0.0.1:${server.port}`, String(streams), String(WARM_MS), String(RUN_MS)], 1);
  await nextMessage<'start'>(client);
  const before = cpuMicros(server.proc.pid!);
  const { cycles, ms } = await nextMessage<{ cycles: number; ms: number }>(client);
  const after = cpuMicros(server.proc.pid!);
  await server.stop();
  return { rate: (cycles * 1000) / ms, cpuUs: (after - before) / cycles };
}

const loadBefore = loadavg()[0];
const rows: Array<Record<string, number>> = [];
for (const streams of STREAMS) {
  const best: Record<Kind, { rate: number; cpuUs: number }> = {
    echo: { rate: 0, cpuUs: Infinity },
    berth: { rate: 0, cpuUs: Infinity },
  };
  const cpuRatios: number[] = [];
  const rateRatios: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // A round is one echo point and one berth point back to back (order alternating), so both see the same
    // neighbours on this shared machine; the ratios judged are the medians of the rounds' ratios.
    const got = {} as Record<Kind, { rate: number; cpuUs: number }>;
    for (const kind of r % 2 === 0 ? (['echo', 'berth'] as const) : (['berth', 'echo'] as const)) {
      const p = await point(kind, streams);
      got[kind] = p;
      best[kind] = { rate: Math.max(best[kind].rate, p.rate), cpuUs: Math.min(best[kind].cpuUs, p.cpuUs) };
    }
    cpuRatios.push(got.berth.cpuUs / got.echo.cpuUs);
    rateRatios.push(got.berth.rate / got.echo.rate);
  }
  rows.push({
    streams,
    echo_rate: Math.round(best.echo.rate),
    claim_rate: Math.round(best.berth.rate),
    rate_ratio: +median(rateRatios).toFixed(2),
    echo_cpu_us: +best.echo.cpuUs.toFixed(1),
    claim_cpu_us: +best.berth.cpuUs.toFixed(1),
    cpu_ratio: +median(cpuRatios).toFixed(2),
    cpu_ratio_worst: +Math.max(...cpuRatios).toFixed(2),
  });
}

const where = pinned ? 'server on core 0, client on core 1' : 'not pinned';
const load = `load average ${loadBefore.toFixed(1)} → ${loadavg()[0].toFixed(1)} on ${availableParallelism()} cores`;
console.log(
  `claim cycle vs bare grpc-js echo (${where}; ${ROUNDS} rounds × ${RUN_MS} ms; rates and CPU: best round; ` +
    `ratios: median of the rounds' side-by-side ratios; ${load})`,
);
const HEAD = [
  'streams',
  'echo cycles/s',
  'claim cycles/s',
  'rate ratio (≥0.6)',
  'echo CPU µs/cycle',
  'claim CPU µs/cycle',
  'CPU ratio (≤2)',
  'worst round',
];
console.log(HEAD.join(' | '));
for (const r of rows) {
  const cells = [
    r.streams,
    r.echo_rate,
    r.claim_rate,
    r.rate_ratio.toFixed(2),
    r.echo_cpu_us.toFixed(1),
    r.claim_cpu_us.toFixed(1),
    r.cpu_ratio.toFixed(2),
    r.cpu_ratio_worst.toFixed(2),
  ];
  console.log(cells.map((c, i) => String(c).padStart(HEAD[i].length)).join(' | '));
}
const out = join(here, 'results', 'wire.json');
mkdirSync(dirname(out), { recursive: true });
const result = {
  pinned,
  rounds: ROUNDS,
  runMs: RUN_MS,
  node: process.version,
  loadavg: [loadBefore, loadavg()[0]],
  rows,
};
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
console.log(`wrote ${out}`);
