/**
 * Claim cycles over the wire against a bare grpc-js bidi echo (issue 9 item 3/4). Each point runs a
 * server child (berth, or an echo built here with the same messages) and a client child that keeps
 * N streams cycling (open, Ask → Granted, Release → Released, close), server and client pinned to
 * separate cores with `taskset` when there are two or more. Prints, per stream count, the cycle
 * rate of both and the server CPU per cycle (process.cpuUsage of the server child, user + system),
 * with ratios measured side by side (echo and berth alternate, best of ROUNDS each), and writes
 * bench/results/wire.json. Targets: CPU ratio ≤ 2, rate ratio ≥ 0.6.
 * The 1-minute load average before and after is printed and saved: other processes on the cores
 * disturb the rates far more than the CPU per cycle (best-of keeps the least disturbed round).
 * Env: WIRE_ROUNDS (default 2), WIRE_MS (measured window, default 3000), WIRE_STREAMS (e.g. "1,16"),
 * WIRE_PROF=<dir> (the berth server child runs with --cpu-prof into <dir>).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const ROUNDS = Number(process.env.WIRE_ROUNDS ?? 2);
const RUN_MS = Number(process.env.WIRE_MS ?? 3000);
const WARM_MS = 1000;
const STREAMS = (process.env.WIRE_STREAMS ?? '1,16,128').split(',').map(Number);
const pinned = availableParallelism() >= 2 && spawnSync('taskset', ['-c', '0', 'true']).status === 0;

type Kind = 'echo' | 'berth';

/** Spawns `script` under node+tsx (pinned to `core` when possible) with an IPC channel. */
function child(script: string, args: string[], core: number, extra: string[] = []): ChildProcess {
  const node = [process.execPath, ...extra, '--import', 'tsx', join(here, 'wire', script), ...args];
  const [cmd, ...rest] = pinned ? ['taskset', '-c', String(core), ...node] : node;
  return spawn(cmd, rest, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
}

function nextMessage<T>(c: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`bench child exited ${code}`));
    c.once('exit', onExit);
    c.once('message', (m) => {
      c.off('exit', onExit);
      resolve(m as T);
    });
  });
}

const cpuMicros = async (s: ChildProcess): Promise<number> => {
  s.send('cpu');
  const { cpu } = await nextMessage<{ cpu: NodeJS.CpuUsage }>(s);
  return cpu.user + cpu.system;
};

/** One point: cycles per second seen by the client and server CPU µs per cycle. */
async function point(kind: Kind, streams: number): Promise<{ rate: number; cpuUs: number }> {
  const dir = process.env.WIRE_PROF;
  const prof = kind === 'berth' && dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
  const server = child('server.ts', [kind], 0, prof);
  const { port } = await nextMessage<{ port: number }>(server);
  const client = child('client.ts', [`127.0.0.1:${port}`, String(streams), String(WARM_MS), String(RUN_MS)], 1);
  await nextMessage<'start'>(client);
  const before = await cpuMicros(server);
  const { cycles, ms } = await nextMessage<{ cycles: number; ms: number }>(client);
  const after = await cpuMicros(server);
  const exited = new Promise((r) => server.once('exit', r));
  server.send('stop');
  await exited;
  return { rate: (cycles * 1000) / ms, cpuUs: (after - before) / cycles };
}

const loadBefore = loadavg()[0];
const rows: Array<Record<string, number>> = [];
for (const streams of STREAMS) {
  const best: Record<Kind, { rate: number; cpuUs: number }> = {
    echo: { rate: 0, cpuUs: Infinity },
    berth: { rate: 0, cpuUs: Infinity },
  };
  for (let r = 0; r < ROUNDS; r++) {
    for (const kind of ['echo', 'berth'] as const) {
      const p = await point(kind, streams);
      best[kind] = { rate: Math.max(best[kind].rate, p.rate), cpuUs: Math.min(best[kind].cpuUs, p.cpuUs) };
    }
  }
  rows.push({
    streams,
    echo_rate: Math.round(best.echo.rate),
    claim_rate: Math.round(best.berth.rate),
    rate_ratio: +(best.berth.rate / best.echo.rate).toFixed(2),
    echo_cpu_us: +best.echo.cpuUs.toFixed(1),
    claim_cpu_us: +best.berth.cpuUs.toFixed(1),
    cpu_ratio: +(best.berth.cpuUs / best.echo.cpuUs).toFixed(2),
  });
}

const where = pinned ? 'server on core 0, client on core 1' : 'not pinned';
const load = `load average ${loadBefore.toFixed(1)} → ${loadavg()[0].toFixed(1)} on ${availableParallelism()} cores`;
console.log(`claim cycle vs bare grpc-js echo (${where}; best of ${ROUNDS} × ${RUN_MS} ms; ${load})`);
const HEAD = [
  'streams',
  'echo cycles/s',
  'claim cycles/s',
  'rate ratio (≥0.6)',
  'echo CPU µs/cycle',
  'claim CPU µs/cycle',
  'CPU ratio (≤2)',
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
