/**
 * The journal's cost (issue 19 item 4). Three parts:
 * 1. commit latency of the embedded store (lmdb under a temporary state dir), in process: K writers each
 *    journal a grant, wait until it is durable, journal the release, wait again (as the Claim handler
 *    does), for JOURNAL_MS; p50/p99 of one commit and the records per commit (group commit);
 * 2. claim cycles over the wire (bench/wire/client.ts) against the real `berth serve` with the journal on
 *    and off, side by side, rounds alternating: the server CPU per cycle (target ≤ 1.5×) and the rate;
 * 3. restart with 10,000 journaled claims: ms from spawning `berth serve` to a ready channel (target ≤ 2000).
 * Env: JOURNAL_ROUNDS (default 3), JOURNAL_MS (window, default 3000), JOURNAL_STREAMS (default "1,128").
 * Writes bench/results/journal.json.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { Journal } from '../src/journal/journal.js';
import { LmdbStore } from '../src/journal/lmdb-store.js';
import type { ClaimRecord } from '../src/journal/records.js';
import { BERTH_BIN } from '../src/berth-bin.js';
import { child, cpuMicros, freePort, health, nextMessage, startBerthServer } from './lib/wire-harness.js';
import { benchStateDir, median, report, type BenchRow } from './support.js';

const ROUNDS = Number(process.env.JOURNAL_ROUNDS ?? 3);
const RUN_MS = Number(process.env.JOURNAL_MS ?? 3000);
const STREAMS = (process.env.JOURNAL_STREAMS ?? '1,128').split(',').map(Number);
const WARM_MS = 1000;
const RESTORED = 10_000;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

const record = (i: number): ClaimRecord => ({
  claimId: `c-bench-${i}`,
  machine: 'engine',
  remote: false,
  allocation: { cpus: 1, gpuIds: [], env: { OMP_NUM_THREADS: '1', CUDA_VISIBLE_DEVICES: '' } },
  clamped: false,
  fellBack: false,
  ask: { cpus: 1, gpus: 0, label: '', policy: 'prefer', node: 'bench.node', runId: 'bench', env: {} },
  tokenHash: '',
  holdMs: 0,
  at: Date.now(),
});

/** Part 1: commits of `writers` concurrent grant+release cycles for RUN_MS. */
async function commits(writers: number): Promise<{ commits: number[]; perCommit: number; cycles: number }> {
  const dir = benchStateDir();
  const ms: number[] = [];
  let records = 0;
  const { journal } = await Journal.open(LmdbStore.open(dir), {
    onCommit: (t, n) => {
      ms.push(t);
      records += n;
    },
  });
  let cycles = 0;
  const end = performance.now() + RUN_MS;
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; performance.now() < end; i++) {
        const r = record(w * 1_000_000 + i);
        journal.claimHeld(r);
        await journal.flushed();
        journal.claimGone(r.claimId);
        await journal.flushed();
        cycles++;
      }
    }),
  );
  await journal.close();
  rmSync(dir, { recursive: true, force: true });
  return { commits: ms, perCommit: records / ms.length, cycles };
}

/** Part 2: one point of claim cycles against berth with `--journal on|off`. */
async function point(journal: 'on' | 'off', streams: number): Promise<{ rate: number; cpuUs: number }> {
  const server = await startBerthServer(['--journal', journal], 'warn');
  const client = child('client.ts', [`127.0.0.1:${server.port}`, String(streams), String(WARM_MS), String(RUN_MS)], 1);
  await nextMessage<'start'>(client);
  const before = cpuMicros(server.proc.pid!);
  const { cycles, ms } = await nextMessage<{ cycles: number; ms: number }>(client);
  const after = cpuMicros(server.proc.pid!);
  await server.stop();
  return { rate: (cycles * 1000) / ms, cpuUs: (after - before) / cycles };
}

/** Part 3: ms from spawn to a ready channel, with `claims` journaled claims to restore. */
async function restart(claims: number): Promise<{ readyMs: number; restoreMs: number }> {
  const dir = benchStateDir();
  const store = LmdbStore.open(dir);
  for (let i = 0; i < claims; i += 1000)
    await store.write(
      Array.from({ length: Math.min(1000, claims - i) }, (_, k) => ({
        key: `claim/c-bench-${i + k}`,
        value: record(i + k),
      })),
    );
  await store.close();
  const port = await freePort();
  const t0 = performance.now();
  const proc = spawn(
    process.execPath,
    [BERTH_BIN, 'serve', '--listen', `127.0.0.1:${port}`, '--cpus', String(Math.max(claims, 1)), '--gpus', ''],
    { env: { ...process.env, BERTH_LOG_LEVEL: 'info', BERTH_STATE_DIR: dir }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  proc.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  await health(port);
  const readyMs = performance.now() - t0;
  const gone = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGKILL');
  await gone;
  rmSync(dir, { recursive: true, force: true });
  const restored = log.split('\n').find((l) => l.includes('"claims":'));
  const restoreMs = restored ? Number(JSON.parse(restored).ms) : NaN;
  return { readyMs, restoreMs };
}

const rows: BenchRow[] = [];
for (const writers of [1, 128]) {
  const c = await commits(writers);
  rows.push({ name: `journal commit p50, ${writers} writer(s)`, value: pct(c.commits, 50), unit: 'ms' });
  rows.push({ name: `journal commit p99, ${writers} writer(s)`, value: pct(c.commits, 99), unit: 'ms' });
  rows.push({ name: `records per commit, ${writers} writer(s)`, value: c.perCommit, unit: 'records' });
  rows.push({ name: `grant+release journaled, ${writers} writer(s)`, value: (c.cycles * 1000) / RUN_MS, unit: '/s' });
}
for (const streams of STREAMS) {
  const cpu: number[] = [];
  const rate: number[] = [];
  const best = { on: { rate: 0, cpuUs: Infinity }, off: { rate: 0, cpuUs: Infinity } };
  for (let r = 0; r < ROUNDS; r++) {
    const got = {} as Record<'on' | 'off', { rate: number; cpuUs: number }>;
    for (const j of r % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
      got[j] = await point(j, streams);
      best[j] = { rate: Math.max(best[j].rate, got[j].rate), cpuUs: Math.min(best[j].cpuUs, got[j].cpuUs) };
    }
    cpu.push(got.on.cpuUs / got.off.cpuUs);
    rate.push(got.on.rate / got.off.rate);
  }
  const cpuRatio = median(cpu);
  rows.push({ name: `claim cycle, journal off, ${streams} stream(s)`, value: best.off.rate, unit: 'cycles/s' });
  rows.push({
    name: `claim cycle, journal on, ${streams} stream(s)`,
    value: best.on.rate,
    unit: 'cycles/s',
    ratio: median(rate),
  });
  rows.push({ name: `server CPU per cycle, journal off, ${streams} stream(s)`, value: best.off.cpuUs, unit: 'µs' });
  rows.push({
    name: `server CPU per cycle, journal on, ${streams} stream(s)`,
    value: best.on.cpuUs,
    unit: 'µs',
    ratio: cpuRatio,
    target: '≤ 1.5× journal off',
    met: cpuRatio <= 1.5,
  });
}
const empty = await restart(0);
const full = await restart(RESTORED);
rows.push({ name: 'start to serving, empty journal', value: empty.readyMs, unit: 'ms' });
rows.push({ name: `restore of ${RESTORED} journaled claims (log line)`, value: full.restoreMs, unit: 'ms' });
rows.push({
  name: `start to serving, ${RESTORED} journaled claims`,
  value: full.readyMs,
  unit: 'ms',
  ratio: full.readyMs / 2000,
  target: '≤ 2000 ms',
  met: full.readyMs <= 2000,
});
report(
  'journal',
  `journal (lmdb, group commit): commits over ${RUN_MS} ms; claim cycles over the wire, journal on vs off, ` +
    `${ROUNDS} rounds alternating (rates, CPU: best round; ratios: median of the rounds' ratios)`,
  rows,
);
