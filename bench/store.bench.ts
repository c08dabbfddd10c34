/**
 * Claim cycles over the wire with the journal in etcd (issue 20, `--store etcd://…`, one leader of a cluster) beside
 * the embedded journal (lmdb under --state-dir): the same real `berth serve` and the same client child as
 * wire.bench.ts (open, Ask → Granted, Release → Released, close), 16 and 128 streams. etcd is a one-member etcd on
 * loopback started here (Debian's etcd-server; skipped, saying so, when none is installed). Rounds alternate the
 * order; the best round's rate is shown per store. Target (issue 20): ≥ 1,000 cycles/s with 128 streams on etcd.
 * Env: STORE_ROUNDS (default 2), STORE_MS (measured window, default 3000), STORE_STREAMS (default "16,128").
 */
import { loadavg } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { credentials } from '@grpc/grpc-js';
import { PlacementServiceClient } from '../generated/ts/berth/v1/placement.js';
import { etcdMissing, startEtcd } from '../test/support/etcd.js';
import { child, cpuMicros, nextMessage, startBerthServer } from './lib/wire-harness.js';

const here = dirname(fileURLToPath(import.meta.url));
const ROUNDS = Number(process.env.STORE_ROUNDS ?? 2);
const RUN_MS = Number(process.env.STORE_MS ?? 3000);
const STREAMS = (process.env.STORE_STREAMS ?? '16,128').split(',').map(Number);

/** Resolves once GetSnapshot answers (a clustered server: once it leads and restored). */
async function leads(port: number): Promise<void> {
  const c = new PlacementServiceClient(`127.0.0.1:${port}`, credentials.createInsecure());
  const end = Date.now() + 20_000;
  try {
    for (;;) {
      const ok = await new Promise<boolean>((resolve) => c.getSnapshot({}, (err) => resolve(!err)));
      if (ok) return;
      if (Date.now() > end) throw new Error('the clustered server did not lead within 20 s');
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    c.close();
  }
}

let clusters = 0;
/** One point: cycles/s seen by the client and server CPU µs per cycle, on `store`. */
async function point(store: string | undefined, streams: number): Promise<{ rate: number; cpuUs: number }> {
  const flags = store ? ['--store', store, '--cluster', `bench-${process.pid}-${++clusters}`] : [];
  const server = await startBerthServer(flags, 'warn');
  await leads(server.port);
  const client = child('client.ts', [`127.0.0.1:${server.port}`, String(streams), '1000', String(RUN_MS)], 1);
  await nextMessage<'start'>(client);
  const before = cpuMicros(server.proc.pid!);
  const { cycles, ms } = await nextMessage<{ cycles: number; ms: number }>(client);
  const after = cpuMicros(server.proc.pid!);
  await server.stop();
  return { rate: (cycles * 1000) / ms, cpuUs: (after - before) / cycles };
}

const missing = etcdMissing();
if (missing) {
  console.log(`store bench skipped: ${missing}`);
} else {
  const etcd = await startEtcd();
  const url = `etcd://${etcd.endpoint}`;
  const rows: Array<Record<string, number>> = [];
  const loadBefore = loadavg()[0];
  try {
    for (const streams of STREAMS) {
      const best = { embedded: { rate: 0, cpuUs: Infinity }, etcd: { rate: 0, cpuUs: Infinity } };
      for (let r = 0; r < ROUNDS; r++) {
        for (const kind of r % 2 === 0 ? (['embedded', 'etcd'] as const) : (['etcd', 'embedded'] as const)) {
          const p = await point(kind === 'etcd' ? url : undefined, streams);
          best[kind] = { rate: Math.max(best[kind].rate, p.rate), cpuUs: Math.min(best[kind].cpuUs, p.cpuUs) };
        }
      }
      rows.push({
        streams,
        embedded_rate: Math.round(best.embedded.rate),
        etcd_rate: Math.round(best.etcd.rate),
        embedded_cpu_us: +best.embedded.cpuUs.toFixed(1),
        etcd_cpu_us: +best.etcd.cpuUs.toFixed(1),
      });
    }
  } finally {
    await etcd.stop();
  }
  const load = `load average ${loadBefore.toFixed(1)} → ${loadavg()[0].toFixed(1)}`;
  console.log(`claim cycle, embedded journal vs etcd (${ROUNDS} rounds × ${RUN_MS} ms; best round; ${load})`);
  const head = [
    'streams',
    'embedded cycles/s',
    'etcd cycles/s (≥1000 at 128)',
    'embedded CPU µs/cycle',
    'etcd CPU µs/cycle',
  ];
  console.log(head.join(' | '));
  for (const r of rows) {
    console.log([r.streams, r.embedded_rate, r.etcd_rate, r.embedded_cpu_us, r.etcd_cpu_us].join(' | '));
  }
  mkdirSync(join(here, 'results'), { recursive: true });
  writeFileSync(join(here, 'results', 'store.json'), `${JSON.stringify({ rows, loadBefore }, null, 2)}\n`);
}
