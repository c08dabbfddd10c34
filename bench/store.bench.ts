/**
 * Claim cycles over the wire with the journal in etcd (issue 20, `--store etcd://…`, one leader of a cluster) beside
 * the embedded journal (lmdb under --state-dir): the same real `berth serve` and the same client child as
 * wire.bench.ts (open, Ask → Granted, Release → Released, close), 16 and 128 streams. etcd is a one-member etcd on
 * loopback started here (Debian's etcd-server; skipped, saying so, when none is installed). Rounds alternate the
 * order; per store, the round with the best rate is shown: cycles/s, grant latency p50/p99 (ms, Ask written to
 * Granted read, seen by the client) and server CPU per cycle. Targets (issue 20), with 128 streams on etcd:
 * ≥ 1,000 cycles/s and a grant p99 under 20 ms. JSON: bench/results/store.json.
 * Env: STORE_ROUNDS (default 2), STORE_MS (measured window, default 3000), STORE_STREAMS (default "16,128"),
 * STORE_PROF=<dir> (each berth server runs with --cpu-prof into <dir>), STORE_KINDS (default "embedded,etcd").
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
const KINDS = (process.env.STORE_KINDS ?? 'embedded,etcd').split(',') as Array<'embedded' | 'etcd'>;

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
/** One point's figures: cycles/s and grant p50/p99 (ms) seen by the client, server CPU µs per cycle. */
interface Point {
  rate: number;
  p50: number;
  p99: number;
  cpuUs: number;
}

/** One point on `store` (undefined: the embedded journal) with `streams` claim streams. */
async function point(store: string | undefined, streams: number): Promise<Point> {
  const flags = store ? ['--store', store, '--cluster', `bench-${process.pid}-${++clusters}`] : [];
  const prof = process.env.STORE_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.STORE_PROF}`] : [];
  const server = await startBerthServer(flags, 'warn', prof);
  await leads(server.port);
  const client = child('client.ts', [`127.0.0.1:${server.port}`, String(streams), '1000', String(RUN_MS)], 1);
  await nextMessage<'start'>(client);
  const before = cpuMicros(server.proc.pid!);
  const got = await nextMessage<{ cycles: number; ms: number; grantP50: number; grantP99: number }>(client);
  const after = cpuMicros(server.proc.pid!);
  await server.stop();
  const { cycles, ms } = got;
  return { rate: (cycles * 1000) / ms, p50: got.grantP50, p99: got.grantP99, cpuUs: (after - before) / cycles };
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
      const none: Point = { rate: 0, p50: 0, p99: 0, cpuUs: 0 };
      const best = { embedded: none, etcd: none };
      for (let r = 0; r < ROUNDS; r++) {
        for (const kind of r % 2 === 0 ? KINDS : [...KINDS].reverse()) {
          const p = await point(kind === 'etcd' ? url : undefined, streams);
          if (p.rate > best[kind].rate) best[kind] = p;
        }
      }
      const round = (x: number, digits: number) => +x.toFixed(digits);
      rows.push({
        streams,
        embedded_rate: Math.round(best.embedded.rate),
        etcd_rate: Math.round(best.etcd.rate),
        embedded_grant_p50_ms: round(best.embedded.p50, 2),
        embedded_grant_p99_ms: round(best.embedded.p99, 2),
        etcd_grant_p50_ms: round(best.etcd.p50, 2),
        etcd_grant_p99_ms: round(best.etcd.p99, 2),
        embedded_cpu_us: round(best.embedded.cpuUs, 1),
        etcd_cpu_us: round(best.etcd.cpuUs, 1),
      });
    }
  } finally {
    await etcd.stop();
  }
  const loadAfter = loadavg()[0];
  const load = `load average ${loadBefore.toFixed(1)} → ${loadAfter.toFixed(1)}`;
  console.log(`claim cycle, embedded journal vs etcd (${ROUNDS} rounds × ${RUN_MS} ms; best round; ${load})`);
  const head = [
    'streams',
    'cycles/s embedded | etcd',
    'grant p50/p99 ms embedded | etcd',
    'CPU µs/cycle embedded | etcd',
  ];
  console.log(head.join(' | '));
  for (const r of rows) {
    const embedded = `${r.embedded_grant_p50_ms}/${r.embedded_grant_p99_ms}`;
    const grants = `${embedded} | ${r.etcd_grant_p50_ms}/${r.etcd_grant_p99_ms}`;
    console.log(
      [r.streams, `${r.embedded_rate} | ${r.etcd_rate}`, grants, `${r.embedded_cpu_us} | ${r.etcd_cpu_us}`].join(' | '),
    );
  }
  const at128 = rows.find((r) => r.streams === 128);
  if (at128) {
    const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
    console.log(
      `targets, 128 streams on etcd: ≥ 1000 cycles/s: ${met(at128.etcd_rate >= 1000)} (${at128.etcd_rate}); ` +
        `grant p99 < 20 ms: ${met(at128.etcd_grant_p99_ms < 20)} (${at128.etcd_grant_p99_ms} ms)`,
    );
  }
  const at = new Date().toISOString();
  mkdirSync(join(here, 'results'), { recursive: true });
  writeFileSync(
    join(here, 'results', 'store.json'),
    `${JSON.stringify({ bench: 'store', at, rounds: ROUNDS, runMs: RUN_MS, loadBefore, loadAfter, rows }, null, 2)}\n`,
  );
}
